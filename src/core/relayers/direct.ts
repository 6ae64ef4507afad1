import type { Relayer } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';

// What a chain family offers for acting as a relayer without sending anything (its spec's
// `direct`): core/relayers/sign-and-forward.ts serves the operations through it.

/** A message signature: EVM `{r, s, v, sig}` (hex without 0x, v 27 or 28), ed25519 `{signature, public_key}`. */
export type MessageSignature = { kind: 'evm'; r: string; s: string; v: number; sig: string } | { kind: 'ed25519'; signature: string; publicKey: string };

/** A transaction signed as the relayer: Solana `{transaction, signature}`, Stellar `{signedXdr, signature}`. */
export type SignedTransaction = { kind: 'solana'; transaction: string; signature: string } | { kind: 'stellar'; signedXdr: string; signature: string };

export interface SignTransactionInput {
  /** Solana: a base64 wire transaction. */
  transaction?: string | null;
  /** Stellar: a base64 transaction envelope XDR. */
  unsignedXdr?: string | null;
}

/** One call the passthrough forwards: its answer is the node's result or the node's error. */
export type Forwarded = { ok: true; result: unknown } | { ok: false; error: { code: number; message: string; description?: string; data?: unknown } };

/** What a chain family offers for these operations; an operation it leaves out is refused as not supported. */
export interface DirectOps {
  signMessage?(rt: Runtime, relayer: Relayer, message: string): Promise<MessageSignature>;
  signTypedData?(rt: Runtime, relayer: Relayer, input: { domainSeparator: string; hashStructMessage: string }): Promise<MessageSignature>;
  signTransaction?(rt: Runtime, relayer: Relayer, input: SignTransactionInput): Promise<SignedTransaction>;
  /** Gasless: a quote of the fee in the user's token, and the transaction built to pay it (the family's request and answer shapes). */
  sponsored?: {
    quote(rt: Runtime, relayer: Relayer, request: unknown): Promise<unknown>;
    build(rt: Runtime, relayer: Relayer, request: unknown): Promise<unknown>;
  };
  /** Why a family without `sponsored` offers none, for its refusal. */
  sponsoredRefusal?: string;
  /** The ERC-4337 bundler and ERC-7677 paymaster JSON-RPC (…/bundler); absent: not offered for the family. */
  bundler?: BundlerOps;
  rpc: {
    /** Why a method is refused, or null when it may be forwarded (a pure rule). */
    refusal(method: string): string | null;
    /** The family's own wrapping of a call (the reference's Solana `rawRpcRequest`), undone. */
    unwrap?(call: { method: string; params: unknown }): { method: string; params: unknown };
    /** Forwards calls to the relayer's RPC URLs with failover, answers in call order. */
    forward(rt: Runtime, relayer: Relayer, calls: { method: string; params: unknown }[]): Promise<Forwarded[]>;
  };
}

/** One bundler call's answer: a result or a JSON-RPC error (ERC-7769's codes). */
export type BundlerAnswer = { ok: true; result: unknown } | { ok: false; error: { code: number; message: string; data?: unknown } };

export interface BundlerOps {
  /** Whether the family offers `method`, and whether it acts as the relayer (sends, signs: needs `execute`) or only reads. */
  method(name: string): 'read' | 'write' | undefined;
  /** Why this relayer offers no bundler (no `user_operations` policy), or null. */
  refusal(rt: Runtime, relayer: Relayer): string | null;
  /** Answers calls the caller may make, in order. */
  call(rt: Runtime, relayer: Relayer, calls: { method: string; params: unknown }[]): Promise<BundlerAnswer[]>;
}
