import type { z } from 'zod';
import type { FamilySpec } from '../family-spec.js';

// Each family's policy schema lives in its folder (chains/<family>/spec.ts).

/** Validates a policy object for a family; returns it in storable form (bigints as decimal strings). */
export function parsePolicies(family: FamilySpec, raw: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; error: z.ZodError } {
  const result = family.policy.schema.safeParse(raw ?? {});
  if (!result.success) return { ok: false, error: result.error };
  return { ok: true, value: toStorable(result.data) as Record<string, unknown> };
}

function toStorable(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(toStorable);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, toStorable(x)]),
    );
  return v;
}
