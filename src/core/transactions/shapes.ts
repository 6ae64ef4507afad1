import { invalid } from '../domain-error.js';
import { describeIssues, jsonMessages } from '../../lib/validate.js';
import type { NetworkType, ShapeOf } from '../family-list.js';
import type { FamilySpecs } from '../registry.js';

// The request shapes of the send route (spec 4.1), one per chain family (its spec.ts), selected by
// the relayer's network type. GraphQL field names; the REST adapter maps the spec's snake_case names onto them.

export { DEFAULT_VALIDITY_MS } from '../family-spec.js';

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Validates a send request for a relayer of `type`, naming fields as the REST spec does. */
export function parseShape<T extends NetworkType>(families: FamilySpecs, type: T, input: Record<string, unknown>): ShapeOf<T> {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const result = families.spec(type).send.schema.safeParse(defined, { error: jsonMessages });
  if (!result.success) {
    const detail = result.error.issues
      .map((i) => {
        const path = i.path.map((p) => snake(String(p))).join('.');
        if (i.code === 'unrecognized_keys') {
          if (path) return `${i.keys.map((k) => `${path}.${snake(k)}`).join(', ')}: unknown field`;
          return `${i.keys.map(snake).join(', ')}: not a field of ${type} transactions`;
        }
        return path ? `${path}: ${i.message}` : i.message;
      })
      .join('; ');
    throw invalid(detail);
  }
  return result.data as ShapeOf<T>;
}

export { describeIssues };
