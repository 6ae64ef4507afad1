import type { z } from 'zod';

// The chain families this build offers, by network type. Core names their types through this
// interface without importing any family: it is declared empty here and filled in from above, where
// src/chains/list.ts merges the listed families' contracts into it.

// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging (src/chains/list.ts)
export interface FamilyList {}

/** A network type some listed family has: the values of the NetworkType enum. */
export type NetworkType = keyof FamilyList & string;
/** The contract (spec.ts) of the family of a network type. */
export type SpecOf<T extends NetworkType> = FamilyList[T];
/** The request a family's send shape gives (its zod schema's output). */
export type ShapeOf<T extends NetworkType> = z.output<SpecOf<T>['send']['schema']>;
