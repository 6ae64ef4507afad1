/** The snake_case column of a camelCase Prisma field (the schema maps every field this way). */
export const columnOf = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A SELECT/RETURNING list that reads columns under their Prisma field names, so raw rows have the
 * shape of Prisma's.
 */
export const columnsAs = (fields: readonly string[]) => fields.map((f) => `"${columnOf(f)}" AS "${f}"`).join(', ');

/** The JSON a `jsonb_to_recordset($n::jsonb)` parameter is sent as: dates as ISO strings, bigints as decimal strings. */
export const recordsetJson = (rows: unknown) => JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
