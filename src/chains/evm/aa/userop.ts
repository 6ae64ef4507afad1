// UserOperations of EntryPoint v0.7 and v0.8: the ERC-7769 JSON form (hex quantities), read into
// viem's UserOperation (bigints) and written back; packing and the userOpHash are viem's.
import { getAddress, hexToBytes, isAddressEqual, keccak256, numberToHex, stringToHex, type Address, type Hex, type SignedAuthorization } from 'viem';
import { hashAuthorization } from 'viem/utils';
import { recoverEvmAddress } from '../../../signers/secp256k1.js';
import { toPackedUserOperation, type PackedUserOperation, type UserOperation } from 'viem/account-abstraction';
import { z } from 'zod';
import { ENTRY_POINT_V07, ENTRY_POINT_V08 } from './canonical.js';
import { invalidParams, USEROP_CODES, UserOpError } from './errors.js';

export type EntryPointVersion = '0.7' | '0.8';
export type UserOp = UserOperation<EntryPointVersion>;

export const ENTRY_POINTS: Record<EntryPointVersion, Address> = { '0.7': ENTRY_POINT_V07, '0.8': ENTRY_POINT_V08 };

export function versionOf(entryPoint: string): EntryPointVersion | undefined {
  if (entryPoint.toLowerCase() === ENTRY_POINT_V07.toLowerCase()) return '0.7';
  if (entryPoint.toLowerCase() === ENTRY_POINT_V08.toLowerCase()) return '0.8';
  return undefined;
}

/** The initCode marker of an EIP-7702 account (EntryPoint v0.8): the sender's delegation is its code. */
export const EIP7702_FACTORY = '0x7702';
const is7702Factory = (f: string | undefined) => f !== undefined && /^0x7702(0{36})?$/i.test(f);

// A quantity: ERC-7769 writes it without leading zeros, but clients pad some (viem's yParity): accept both.
const quantity = z
  .string()
  .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed hex quantity of at most 256 bits')
  .transform((s) => BigInt(s));
const data = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex bytes');
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x-prefixed address')
  .transform((s) => getAddress(s.toLowerCase()));
const word = z.string().regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed 32-byte value');

/** secp256k1's order, halved: EIP-2's bound on a signature's s. */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

// What EIP-7702 checks of an authorization before applying it; one that fails is skipped, not an
// error: the sender would stay undelegated and its operation fail inside the bundle. A high s
// recovers to the same signer as its low twin (n - s, yParity flipped), so recovery does not catch it.
const authorization = z
  .object({
    chainId: quantity,
    address,
    nonce: quantity.refine((n) => n < 2n ** 64n - 1n, 'must be below 2^64 - 1'),
    yParity: quantity.refine((y) => y <= 1n, 'must be 0 or 1'),
    r: word,
    s: word.refine((s) => BigInt(s) <= HALF_N, 'is above secp256k1n/2, and EIP-7702 skips such an authorization: sign it again (low s)'),
  })
  .strip()
  .transform(
    (a): SignedAuthorization => ({
      chainId: Number(a.chainId),
      address: a.address,
      nonce: Number(a.nonce),
      yParity: Number(a.yParity),
      r: numberToHex(BigInt(a.r), { size: 32 }),
      s: numberToHex(BigInt(a.s), { size: 32 }),
    }),
  );

const gasFields = {
  callGasLimit: quantity,
  verificationGasLimit: quantity,
  preVerificationGas: quantity,
  maxFeePerGas: quantity,
  maxPriorityFeePerGas: quantity,
  paymasterVerificationGasLimit: quantity,
  paymasterPostOpGasLimit: quantity,
};

const opObject = z
  .object({
    sender: address,
    nonce: quantity,
    factory: z
      .string()
      .regex(/^0x([0-9a-fA-F]{4}|[0-9a-fA-F]{40})$/, 'must be an address or 0x7702')
      .nullish(),
    factoryData: data.nullish(),
    callData: data,
    ...gasFields,
    paymaster: address.nullish(),
    paymasterData: data.nullish(),
    signature: data,
    eip7702Auth: authorization.nullish(),
  })
  .strip();

/** The form eth_sendUserOperation takes: every field the EntryPoint reads. */
const sendShape = opObject.partial({
  factory: true,
  factoryData: true,
  paymaster: true,
  paymasterData: true,
  paymasterVerificationGasLimit: true,
  paymasterPostOpGasLimit: true,
});
/** The form eth_estimateUserOperationGas takes: gas limits and fees may be absent, the signature a dummy. */
const estimateShape = opObject.partial({
  factory: true,
  factoryData: true,
  paymaster: true,
  paymasterData: true,
  callGasLimit: true,
  verificationGasLimit: true,
  preVerificationGas: true,
  maxFeePerGas: true,
  maxPriorityFeePerGas: true,
  paymasterVerificationGasLimit: true,
  paymasterPostOpGasLimit: true,
  signature: true,
});

type Parsed = z.output<typeof estimateShape>;

function issueText(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || 'userOperation'}: ${i.message}`).join('; ');
}

function finish(p: Parsed, version: EntryPointVersion): UserOp {
  const op: UserOp = {
    sender: p.sender,
    nonce: p.nonce,
    callData: p.callData as Hex,
    callGasLimit: p.callGasLimit ?? 0n,
    verificationGasLimit: p.verificationGasLimit ?? 0n,
    preVerificationGas: p.preVerificationGas ?? 0n,
    maxFeePerGas: p.maxFeePerGas ?? 0n,
    maxPriorityFeePerGas: p.maxPriorityFeePerGas ?? 0n,
    signature: (p.signature ?? '0x') as Hex,
  };
  if (p.factory) {
    if (is7702Factory(p.factory)) {
      if (version !== '0.8') throw invalidParams('factory: 0x7702 (an EIP-7702 account) needs EntryPoint v0.8');
      op.factory = EIP7702_FACTORY as Address;
    } else {
      if (p.factory.length !== 42) throw invalidParams('factory: must be a 20-byte address or 0x7702');
      op.factory = getAddress(p.factory.toLowerCase());
    }
    op.factoryData = (p.factoryData ?? '0x') as Hex;
  } else if (p.factoryData && p.factoryData !== '0x') {
    throw invalidParams('factoryData: given without a factory');
  }
  if (p.eip7702Auth) {
    if (version !== '0.8') throw invalidParams('eip7702Auth: needs EntryPoint v0.8');
    op.authorization = p.eip7702Auth;
  }
  if (p.paymaster) {
    op.paymaster = p.paymaster;
    op.paymasterData = (p.paymasterData ?? '0x') as Hex;
    op.paymasterVerificationGasLimit = p.paymasterVerificationGasLimit ?? 0n;
    op.paymasterPostOpGasLimit = p.paymasterPostOpGasLimit ?? 0n;
  } else if ((p.paymasterData && p.paymasterData !== '0x') || p.paymasterVerificationGasLimit || p.paymasterPostOpGasLimit) {
    throw invalidParams('paymasterData and the paymaster gas limits need a paymaster');
  }
  for (const [k, v] of Object.entries({
    callGasLimit: op.callGasLimit,
    verificationGasLimit: op.verificationGasLimit,
    maxFeePerGas: op.maxFeePerGas,
    maxPriorityFeePerGas: op.maxPriorityFeePerGas,
    paymasterVerificationGasLimit: op.paymasterVerificationGasLimit ?? 0n,
    paymasterPostOpGasLimit: op.paymasterPostOpGasLimit ?? 0n,
  })) {
    if (v >= 1n << 128n) throw invalidParams(`${k}: must fit in 128 bits`);
  }
  if (op.maxPriorityFeePerGas > op.maxFeePerGas) throw invalidParams('maxPriorityFeePerGas: must not exceed maxFeePerGas');
  return op;
}

/** Reads the params of eth_sendUserOperation ([op, entryPoint]); -32602 for anything malformed. */
export function readUserOp(params: unknown, mode: 'send' | 'estimate'): { op: UserOp; version: EntryPointVersion; entryPoint: Address } {
  if (!Array.isArray(params) || params.length < 2) throw invalidParams('params: expected [userOperation, entryPoint]');
  const [raw, ep] = params;
  const version = typeof ep === 'string' ? versionOf(ep) : undefined;
  if (!version) throw invalidParams(`entryPoint: not supported (supported: ${ENTRY_POINT_V08}, ${ENTRY_POINT_V07})`);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidParams('userOperation: must be an object');
  if ('initCode' in raw || 'paymasterAndData' in raw)
    throw invalidParams('userOperation: v0.7+ operations name factory/factoryData and paymaster/paymasterData, not initCode or paymasterAndData');
  const parsed = (mode === 'send' ? sendShape : estimateShape).safeParse(raw);
  if (!parsed.success) throw invalidParams(issueText(parsed.error));
  return { op: finish(parsed.data, version), version, entryPoint: ENTRY_POINTS[version] };
}

const hex = (n: bigint | number) => numberToHex(n);

/** An operation in ERC-7769's JSON form. */
export function userOpJson(op: UserOp): Record<string, unknown> {
  const out: Record<string, unknown> = {
    sender: op.sender,
    nonce: hex(op.nonce),
    callData: op.callData,
    callGasLimit: hex(op.callGasLimit),
    verificationGasLimit: hex(op.verificationGasLimit),
    preVerificationGas: hex(op.preVerificationGas),
    maxFeePerGas: hex(op.maxFeePerGas),
    maxPriorityFeePerGas: hex(op.maxPriorityFeePerGas),
    signature: op.signature,
  };
  if (op.factory) {
    out.factory = op.factory;
    out.factoryData = op.factoryData ?? '0x';
  }
  if (op.paymaster) {
    out.paymaster = op.paymaster;
    out.paymasterVerificationGasLimit = hex(op.paymasterVerificationGasLimit ?? 0n);
    out.paymasterPostOpGasLimit = hex(op.paymasterPostOpGasLimit ?? 0n);
    out.paymasterData = op.paymasterData ?? '0x';
  }
  if (op.authorization) {
    const a = op.authorization;
    out.eip7702Auth = { chainId: hex(a.chainId), address: a.address, nonce: hex(a.nonce), yParity: hex(a.yParity ?? 0), r: a.r, s: a.s };
  }
  return out;
}

/** The operation as handleOps takes it. */
export const packUserOp = (op: UserOp): PackedUserOperation => toPackedUserOperation(op);

// The hash's constants: EIP-712's domain type and ERC-4337's names, hashed once.
const DOMAIN_TYPE = keccak256(stringToHex('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'));
const DOMAIN_NAME = keccak256(stringToHex('ERC4337'));
const DOMAIN_VERSION = keccak256(stringToHex('1'));
const OP_TYPE = keccak256(
  stringToHex(
    'PackedUserOperation(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,uint256 preVerificationGas,bytes32 gasFees,bytes paymasterAndData)',
  ),
);
/** A 32-byte ABI word, without 0x: of a number, an address or a 32-byte hex. */
const w = (v: bigint | number | string) => (typeof v === 'string' ? v.slice(2).toLowerCase() : v.toString(16)).padStart(64, '0');

/**
 * The userOpHash (viem's getUserOperationHash, written out: its generic EIP-712 encoding was most
 * of an acceptance's hashing). For an EIP-7702 operation the hash covers the delegate: the
 * authorization's, or (for an account already delegated, sent without one) `delegate`, read from the
 * sender's code.
 */
export function userOpHash(op: UserOp, version: EntryPointVersion, chainId: number, delegate?: Address): Hex {
  const withDelegate =
    is7702Factory(op.factory) && !op.authorization && delegate
      ? { ...op, authorization: { address: delegate, chainId, nonce: 0, r: '0x', s: '0x', yParity: 0 } as never }
      : op;
  const p = toPackedUserOperation(withDelegate as never, { forHash: true });
  const fields = [
    w(p.sender),
    w(p.nonce),
    w(keccak256(p.initCode)),
    w(keccak256(p.callData)),
    w(p.accountGasLimits),
    w(p.preVerificationGas),
    w(p.gasFees),
    w(keccak256(p.paymasterAndData)),
  ].join('');
  const ep = ENTRY_POINTS[version];
  if (version === '0.7') return keccak256(`0x${w(keccak256(`0x${fields}`))}${w(ep)}${w(chainId)}`);
  const domain = keccak256(`0x${w(DOMAIN_TYPE)}${w(DOMAIN_NAME)}${w(DOMAIN_VERSION)}${w(chainId)}${w(ep)}`);
  return keccak256(`0x1901${domain.slice(2)}${keccak256(`0x${w(OP_TYPE)}${fields}`).slice(2)}`);
}

/** The delegate an account's code designates (EIP-7702: 0xef0100 ‖ address), if any. */
export function delegateOf(code: Hex | undefined): Address | undefined {
  return code && /^0xef0100[0-9a-fA-F]{40}$/.test(code) ? getAddress(`0x${code.slice(8)}`) : undefined;
}

/**
 * Checks an operation's EIP-7702 authorization against the chain: signed by the sender, for this
 * chain (or any), at the sender's current account nonce (its form, low s included, is checked
 * when it is read). A wrong one would make the bundle's type-4 transaction skip it, and the
 * operation fail inside the bundle.
 */
export async function checkAuthorization(op: UserOp, chainId: number, accountNonce: number, signed = true): Promise<void> {
  const a = op.authorization;
  if (!a) return;
  if (a.chainId !== 0 && a.chainId !== chainId) throw invalidParams(`eip7702Auth.chainId: ${a.chainId} is not this chain (${chainId}) nor 0`);
  if (a.nonce !== accountNonce) throw invalidParams(`eip7702Auth.nonce: ${a.nonce}, but the sender's account nonce is ${accountNonce}`);
  // Estimation and paymaster stub data come with a dummy signature (viem's), by design.
  if (!signed) return;
  const signer = recoverEvmAddress(hexToBytes(hashAuthorization(a)), { r: a.r, s: a.s, yParity: a.yParity ?? Number(a.v ?? -1n) });
  if (!signer) throw new UserOpError(USEROP_CODES.signature, 'eip7702Auth: the signature does not recover');
  if (!isAddressEqual(signer, op.sender)) throw new UserOpError(USEROP_CODES.signature, `eip7702Auth: signed by ${signer}, not by the sender ${op.sender}`);
}
