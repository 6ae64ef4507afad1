import { z } from 'zod';

export const U128_MAX = (1n << 128n) - 1n;
export const INT64_MAX = (1n << 63n) - 1n;

/** An integer given as a JSON number or bigint (never a string), within [0, max]. */
export const nonNegativeInt = (max: bigint, label: string) =>
  z.union([z.number(), z.bigint()], { message: `must be an integer` }).transform((v, ctx) => {
    if (typeof v === 'number' && !Number.isInteger(v)) {
      ctx.addIssue({ code: 'custom', message: 'must be an integer' });
      return z.NEVER;
    }
    const n = BigInt(v);
    if (n < 0n) {
      ctx.addIssue({ code: 'custom', message: 'must be >= 0' });
      return z.NEVER;
    }
    if (n > max) {
      ctx.addIssue({ code: 'custom', message: `must fit in ${label}` });
      return z.NEVER;
    }
    return n;
  });

export const u128 = nonNegativeInt(U128_MAX, 'u128');
export const int64 = nonNegativeInt(INT64_MAX, 'int64');

export const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
export const hexData = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex with whole bytes');

/** An RFC 3339 timestamp, as a Date. */
export const rfc3339 = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i, 'must be an RFC 3339 timestamp')
  .transform((s, ctx) => {
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid date' });
      return z.NEVER;
    }
    return d;
  });

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * "field: why" for every issue, the detail users see beside "Bad Request". Fields are named as the
 * REST spec and the config file name them (snake_case), list items as [i].
 */
export function describeIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((i) => {
      const path = i.path.reduce<string>(
        (p, seg) => (typeof seg === 'number' ? `${p}[${seg}]` : p ? `${p}.${snake(String(seg))}` : snake(String(seg))),
        prefix,
      );
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}
