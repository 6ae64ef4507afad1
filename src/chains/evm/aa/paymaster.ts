// The relayer's verifying paymaster (contracts/RelayerPaymaster.sol) seen from TypeScript: where it
// lives, how it is deployed, what its signer signs, and how paymasterData is laid out.
import { concat, encodeDeployData, hexToBigInt, numberToHex, pad, size, slice, type Address, type Hex, type TypedDataDefinition } from 'viem';
import type { PackedUserOperation } from 'viem/account-abstraction';
import { CREATE2_DEPLOYER, create2Address, create2Calldata } from './canonical.js';
import { relayerPaymasterAbi, relayerPaymasterBytecode } from './paymaster-artifact.js';

export { relayerPaymasterAbi };

/** One paymaster per (EntryPoint, owner, signer): the salt is fixed, the constructor arguments tell them apart. */
const SALT: Hex = pad('0x52656c617965725061796d6173746572', { size: 32 }); // "RelayerPaymaster"

export type PaymasterDeployment = { address: Address; to: Address; data: Hex };

/**
 * The paymaster of `owner` (the relayer's account, which may withdraw) honouring `signer` at
 * `entryPoint`: its address, and the transaction (to the deterministic deployer) that creates it.
 * The address is known before it exists, so a deployment is idempotent: look for code there first.
 */
export function paymasterDeployment(entryPoint: Address, owner: Address, signer: Address): PaymasterDeployment {
  const code = encodeDeployData({ abi: relayerPaymasterAbi, bytecode: relayerPaymasterBytecode, args: [entryPoint, owner, signer] });
  return { address: create2Address(SALT, code), to: CREATE2_DEPLOYER, data: create2Calldata(SALT, code) };
}

/** The approval window: seconds since the epoch; validUntil 0 means no end (the EntryPoint's rule). */
export type Window = { validUntil: number; validAfter: number };

const APPROVAL_TYPES = {
  Approval: [
    { name: 'sender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'initCode', type: 'bytes' },
    { name: 'callData', type: 'bytes' },
    { name: 'accountGasLimits', type: 'bytes32' },
    { name: 'paymasterGasLimits', type: 'bytes32' },
    { name: 'preVerificationGas', type: 'uint256' },
    { name: 'gasFees', type: 'bytes32' },
    { name: 'validUntil', type: 'uint48' },
    { name: 'validAfter', type: 'uint48' },
  ],
} as const;

/**
 * What the relayer's signer signs to approve `op` (in its on-chain packed form; its
 * paymasterAndData must already name the paymaster and its gas limits, which the approval covers).
 */
export function approvalTypedData(
  op: PackedUserOperation,
  paymaster: Address,
  chainId: number,
  w: Window,
): TypedDataDefinition<typeof APPROVAL_TYPES, 'Approval'> {
  if (size(op.paymasterAndData) < 52 || slice(op.paymasterAndData, 0, 20).toLowerCase() !== paymaster.toLowerCase()) {
    throw new Error(`paymasterAndData must start with the paymaster ${paymaster} and its two gas limits`);
  }
  return {
    domain: { name: 'RelayerPaymaster', version: '1', chainId, verifyingContract: paymaster },
    types: APPROVAL_TYPES,
    primaryType: 'Approval',
    message: {
      sender: op.sender,
      nonce: op.nonce,
      initCode: op.initCode,
      callData: op.callData,
      accountGasLimits: op.accountGasLimits,
      paymasterGasLimits: slice(op.paymasterAndData, 20, 52),
      preVerificationGas: op.preVerificationGas,
      gasFees: op.gasFees,
      validUntil: w.validUntil,
      validAfter: w.validAfter,
    },
  };
}

/**
 * A signature of the right length and form (low s, v 27) that approves nothing: validation with it
 * costs what it costs with a real one, so gas estimated with it holds (ERC-7677 stub data).
 */
export const STUB_SIGNATURE: Hex = `0x${'11'.repeat(32)}${'22'.repeat(32)}1b`;

/** paymasterData: validUntil (6 bytes) ‖ validAfter (6 bytes) ‖ signature (65 bytes). */
export const paymasterData = (w: Window, signature: Hex): Hex =>
  concat([numberToHex(w.validUntil, { size: 6 }), numberToHex(w.validAfter, { size: 6 }), signature]);

export function readPaymasterData(data: Hex): Window & { signature: Hex } {
  if (size(data) !== 77) throw new Error(`paymasterData must be 77 bytes, not ${size(data)}`);
  return { validUntil: Number(hexToBigInt(slice(data, 0, 6))), validAfter: Number(hexToBigInt(slice(data, 6, 12))), signature: slice(data, 12) };
}
