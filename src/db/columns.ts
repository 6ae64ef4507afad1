/** The snake_case column of a camelCase Prisma field (the schema maps every field this way). */
export const columnOf = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A SELECT/RETURNING list that reads columns under their Prisma field names, so raw rows have the
 * shape of Prisma's.
 */
export const columnsAs = (fields: readonly string[]) => fields.map((f) => `"${columnOf(f)}" AS "${f}"`).join(', ');
