import type { NetworkType } from './family-list.js';
import type { FamilySpec } from './family-spec.js';
import type { DirectOps } from './relayers/direct.js';
import type { ChainFamily } from './transactions/pipeline.js';

/**
 * The chain families a service offers, by their contracts (each family's spec.ts): built once at
 * the composition root from chains/list.ts and handed to what derives from it (config checks,
 * policies, send shapes, records, the GraphQL schema, the REST routes).
 */
export interface FamilySpecs {
  /** The contracts, ordered by network type. */
  readonly list: readonly FamilySpec[];
  readonly types: readonly [NetworkType, ...NetworkType[]];
  has(type: string): type is NetworkType;
  /** The contract of a network type; throws on a type no family has (a row written by another version). */
  spec(type: string): FamilySpec;
}

/** The families with their pipelines loaded: what the runtime holds. */
export interface Families extends FamilySpecs {
  /** The pipeline of a network type, undefined for a type no family has. */
  pipeline(type: string): ChainFamily | undefined;
  /** The family's signing and forwarding (its spec's `direct`), imported on first use and kept. */
  direct(type: string): Promise<DirectOps | undefined>;
}

// The runtime's group of the chain families, declared here with their contract: the contract takes
// the runtime, so core/runtime.ts, which everything imports, cannot import it.
declare module './runtime.js' {
  interface Runtime {
    /** The chain families this service offers, with their pipelines. */
    families: Families;
  }
}

export function familySpecs(specs: readonly FamilySpec[]): FamilySpecs {
  const list = [...specs].sort((a, b) => (a.type < b.type ? -1 : 1));
  const byType = new Map(list.map((f) => [f.type, f]));
  if (byType.size !== list.length) throw new Error('two chain families have the same network type');
  return {
    list,
    types: list.map((f) => f.type) as unknown as [NetworkType, ...NetworkType[]],
    has: (type): type is NetworkType => byType.has(type),
    spec(type) {
      const spec = byType.get(type);
      if (!spec) throw new Error(`no chain family for network type "${type}"`);
      return spec;
    },
  };
}

/** The registry of `specs`, with every family's pipeline imported (its spec's `load`). */
export async function loadFamilies(specs: readonly FamilySpec[]): Promise<Families> {
  const registry = familySpecs(specs);
  const pipelines = new Map(await Promise.all(registry.list.map(async (spec) => [spec.type, (await spec.load()) as ChainFamily] as const)));
  // Kept: a dynamic import() each call went through the module loader's hooks on every request.
  const direct = new Map<string, Promise<DirectOps | undefined>>();
  return {
    ...registry,
    pipeline: (type) => pipelines.get(type),
    direct(type) {
      let ops = direct.get(type);
      if (!ops) direct.set(type, (ops = Promise.resolve(registry.spec(type).direct?.())));
      return ops;
    },
  };
}
