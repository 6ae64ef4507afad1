/**
 * A SELECT/RETURNING list that reads columns under their Prisma field names (the snake_case
 * column of each camelCase field), so raw rows have the shape of Prisma's.
 */
export const columnsAs = (fields: readonly string[]) =>
  fields.map((f) => `"${f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}" AS "${f}"`).join(', ');
