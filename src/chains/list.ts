// The chain families this service offers, one line each: their contracts (each folder's spec.ts).
export { evmSpec } from './evm/spec.js';
export { solanaSpec } from './solana/spec.js';
export { stellarSpec } from './stellar/spec.js';
