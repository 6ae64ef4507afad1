import type { FamilySpec } from '../core/family.js';
import * as listed from './list.js';

type Listed = (typeof listed)[keyof typeof listed];

/**
 * The chain families this service offers, as listed in list.ts (the one place they are listed),
 * ordered by network type. Everything that names network types (the NetworkType enum, config
 * checks, policies, send shapes, records, OpenAPI) is derived from this list.
 */
export const FAMILIES: readonly Listed[] = Object.values(listed).sort((a, b) => (a.type < b.type ? -1 : 1));

export type NetworkType = Listed['type'];
export type SpecOf<T extends NetworkType> = Extract<Listed, { type: T }>;

export const NETWORK_TYPES = FAMILIES.map((f) => f.type) as [NetworkType, ...NetworkType[]];

const byType = new Map<string, FamilySpec>(FAMILIES.map((f) => [f.type, f as FamilySpec]));

export const isNetworkType = (type: string): type is NetworkType => byType.has(type);

/** The contract of a network type; throws on a type no family has (a row written by another version). */
export function specOf(type: string): FamilySpec {
  const spec = byType.get(type);
  if (!spec) throw new Error(`no chain family for network type "${type}"`);
  return spec;
}
