/** The snake_case column of a camelCase Prisma field (the schema maps every field this way). */
export const columnOf = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A SELECT/RETURNING list that reads columns under their Prisma field names, so raw rows have the
 * shape of Prisma's.
 */
export const columnsAs = (fields: readonly string[]) => fields.map((f) => `"${columnOf(f)}" AS "${f}"`).join(', ');

/** A top-level value of a recordset row as JSON can carry it: a bigint as a decimal string. */
export const recordsetValue = (v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/**
 * The JSON a `jsonb_to_recordset($n::jsonb)` parameter is sent as: dates as ISO strings, bigints
 * (top-level fields: a JSON column holds none) as decimal strings. Without a replacer function,
 * which would be called for every value down to the last nested one.
 */
export function recordsetJson(rows: readonly Record<string, unknown>[]): string {
  return JSON.stringify(
    rows.map((row) => {
      let out = row;
      for (const k in row) {
        const v = row[k];
        if (typeof v !== 'bigint') continue;
        if (out === row) out = { ...row };
        out[k] = recordsetValue(v);
      }
      return out;
    }),
  );
}
