import { nativeToScVal, StrKey, xdr } from '@stellar/stellar-base';
import { fieldError } from './request-error.js';

// Contract call arguments arrive as JSON. Typed single-key objects pick the
// Soroban type ({"u32": 5}, {"i128": "-10"}, {"symbol": "transfer"},
// {"address": "G..."}, {"bytes": "<hex>"}, {"vec": [...]},
// {"map": [{"key": ..., "val": ...}]}, {"void": null}); bare JSON values are
// handed to the SDK's nativeToScVal (string -> string, boolean -> bool,
// integer -> u64/i64 (wider when it does not fit), array -> vec, null -> void).

const INT_BITS: Record<string, { bits: number; signed: boolean }> = {
  u32: { bits: 32, signed: false },
  i32: { bits: 32, signed: true },
  u64: { bits: 64, signed: false },
  i64: { bits: 64, signed: true },
  u128: { bits: 128, signed: false },
  i128: { bits: 128, signed: true },
  u256: { bits: 256, signed: false },
  i256: { bits: 256, signed: true },
};

function toInteger(value: unknown, type: string, path: string): xdr.ScVal {
  const { bits, signed } = INT_BITS[type];
  let n: bigint;
  if (typeof value === 'bigint') n = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) n = BigInt(value);
  else if (typeof value === 'string' && /^-?\d+$/.test(value)) n = BigInt(value);
  else throw fieldError(path, `${type} must be an integer (number or decimal string)`);
  const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
  const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
  if (n < min || n > max) throw fieldError(path, `${value} is out of range for ${type}`);
  return nativeToScVal(bits === 32 ? Number(n) : n, { type });
}

export function jsonToScVal(value: unknown, path: string): xdr.ScVal {
  if (value === null) return xdr.ScVal.scvVoid();
  if (Array.isArray(value)) return xdr.ScVal.scvVec(value.map((v, i) => jsonToScVal(v, `${path}[${i}]`)));
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw fieldError(path, 'numbers must be integers; use a typed form like {"i128": "..."}');
    return nativeToScVal(value);
  }
  // Integers beyond 2^53 arrive as bigint (lossless JSON); the SDK types them by size like numbers.
  if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') return nativeToScVal(value);
  if (typeof value !== 'object') throw fieldError(path, 'unsupported argument value');

  const keys = Object.keys(value);
  if (keys.length !== 1) throw fieldError(path, 'a typed argument must have exactly one key naming its type');
  const type = keys[0];
  const inner = (value as Record<string, unknown>)[type];
  const at = `${path}.${type}`;
  if (type in INT_BITS) return toInteger(inner, type, at);
  switch (type) {
    case 'void':
      return xdr.ScVal.scvVoid();
    case 'bool':
      if (typeof inner !== 'boolean') throw fieldError(at, 'must be a boolean');
      return xdr.ScVal.scvBool(inner);
    case 'string':
      if (typeof inner !== 'string') throw fieldError(at, 'must be a string');
      return nativeToScVal(inner, { type: 'string' });
    case 'symbol':
      if (typeof inner !== 'string' || !/^[A-Za-z0-9_]{1,32}$/.test(inner)) {
        throw fieldError(at, 'must be 1-32 characters of [A-Za-z0-9_]');
      }
      return nativeToScVal(inner, { type: 'symbol' });
    case 'address':
      if (typeof inner !== 'string' || !(StrKey.isValidEd25519PublicKey(inner) || StrKey.isValidContract(inner))) {
        throw fieldError(at, 'must be a G... account or C... contract address');
      }
      return nativeToScVal(inner, { type: 'address' });
    case 'bytes':
      if (typeof inner !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(inner)) throw fieldError(at, 'must be a hex string');
      return xdr.ScVal.scvBytes(Buffer.from(inner, 'hex'));
    case 'vec':
      if (!Array.isArray(inner)) throw fieldError(at, 'must be an array');
      return xdr.ScVal.scvVec(inner.map((v, i) => jsonToScVal(v, `${at}[${i}]`)));
    case 'map':
      if (!Array.isArray(inner)) throw fieldError(at, 'must be an array of {key, val}');
      return xdr.ScVal.scvMap(
        inner.map((entry, i) => {
          if (!entry || typeof entry !== 'object' || !('key' in entry) || !('val' in entry)) {
            throw fieldError(`${at}[${i}]`, 'must be {key, val}');
          }
          return new xdr.ScMapEntry({
            key: jsonToScVal(entry.key, `${at}[${i}].key`),
            val: jsonToScVal(entry.val, `${at}[${i}].val`),
          });
        }),
      );
    default:
      throw fieldError(path, `unknown argument type "${type}"`);
  }
}
