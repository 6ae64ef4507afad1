import { evmSpec } from './evm/spec.js';
import { solanaSpec } from './solana/spec.js';
import { stellarSpec } from './stellar/spec.js';

// The chain families this service offers, one line each: their contracts (each folder's spec.ts).
// The composition root (src/service.ts) builds the family registry (core/registry.ts) from this
// list; nothing else imports it.
export const FAMILY_SPECS = [evmSpec, solanaSpec, stellarSpec] as const;

type Listed = (typeof FAMILY_SPECS)[number];
type ByType = { [S in Listed as S['type']]: S };

declare module '../core/family-list.js' {
  interface FamilyList extends ByType {}
}
