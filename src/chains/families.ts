import type { FamilySpec } from '../core/family.js';
import { evmSpec } from './evm/spec.js';
import { solanaSpec } from './solana/spec.js';
import { stellarSpec } from './stellar/spec.js';

/**
 * The chain families this service offers: the one place they are listed. Everything that names
 * network types (the NetworkType enum, config checks, policies, send shapes, records, OpenAPI)
 * is derived from this list.
 */
export const FAMILIES = [evmSpec, solanaSpec, stellarSpec] as const;

export type NetworkType = (typeof FAMILIES)[number]['type'];
export type SpecOf<T extends NetworkType> = Extract<(typeof FAMILIES)[number], { type: T }>;

export const NETWORK_TYPES = FAMILIES.map((f) => f.type) as [NetworkType, ...NetworkType[]];

const byType = new Map<string, FamilySpec>(FAMILIES.map((f) => [f.type, f as FamilySpec]));

export const isNetworkType = (type: string): type is NetworkType => byType.has(type);

/** The contract of a network type; throws on a type no family has (a row written by another version). */
export function specOf(type: string): FamilySpec {
  const spec = byType.get(type);
  if (!spec) throw new Error(`no chain family for network type "${type}"`);
  return spec;
}
