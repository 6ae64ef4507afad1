import type { Hex } from 'viem';
import type { Transaction } from '../../generated/prisma/client.js';
import type { FeesJson } from './pricing.js';

/** One signed transaction at the row's nonce, persisted before it is broadcast. */
export interface Broadcast {
  hash: Hex;
  /** The client's transaction, or a 0-value self-transfer that takes the nonce instead. */
  kind: 'payload' | 'noop';
  /** Which payload (a replace makes a new one); payload broadcasts only. */
  version?: number;
  nonce: string;
  gasLimit: string;
  fees: FeesJson;
  signedAt: string;
}

/** A payload as it was before a replace, kept in case that earlier version is the one mined. */
export interface PayloadSnapshot {
  to: string | null;
  value: string;
  data: string | null;
  gasLimit: string | null;
}

export type NoopOutcome = { status: 'canceled' | 'expired' | 'failed'; reason: string };

/**
 * The pipeline's state of one EVM transaction (the row's chain_state). Statuses are what users
 * see; this is what the pipeline needs to continue after a crash at any point. A change gives a
 * field a new value and never changes a value in place: states read from rows, and copies written,
 * share their values.
 */
export interface EvmState {
  /** What the nonce is being driven to. */
  goal: 'payload' | 'noop';
  /** With goal 'noop': the status the transaction ends in, and why. */
  outcome?: NoopOutcome;
  /**
   * new: the goal needs a (new) signature; signed: `raw` is persisted and may or may not have
   * reached a node; broadcast: a node accepted `raw`; mined: a receipt was seen; done: nothing left.
   */
  phase: 'new' | 'signed' | 'broadcast' | 'mined' | 'done';
  /** The latest signed bytes, re-broadcast as they are after a restart. */
  raw?: Hex;
  /** Every signed transaction at this nonce, oldest first (any of them may be the one mined). */
  broadcasts: Broadcast[];
  /** When the latest broadcast was accepted by a node (resubmission clock). */
  acceptedAt?: string;
  /** A payload broadcast may have reached a node (one accepted it, or its answer was lost), so a payload may still be mined. */
  payloadOut?: boolean;
  /** Current payload version (0 until the first replace). */
  version: number;
  previous?: Record<string, PayloadSnapshot>;
  /** The receipt we saw: which broadcast, where. */
  mined?: { hash: Hex; blockNumber: string; blockHash: Hex; success: boolean };
  /** Since when the chain's nonce is past ours with no receipt of ours and no proof of whose transaction took it. */
  unattributed?: string;
  /** Something users should know while it is in flight (cancel requested, replaced, resubmitted). */
  note?: string | null;
  /** Why the pipeline is waiting, in user words (kept in status_reason while it applies). */
  waiting?: string;
  /** Published details (networkData in GraphQL). */
  public?: Record<string, unknown>;
}

export function readState(tx: Pick<Transaction, 'chainState'>): EvmState {
  const s = tx.chainState as Partial<EvmState> | null;
  return {
    goal: s?.goal ?? 'payload',
    phase: s?.phase ?? 'new',
    broadcasts: s?.broadcasts ?? [],
    version: s?.version ?? 0,
    ...(s ?? {}),
  } as EvmState;
}

/** A payload of any version was signed, so it may be out there even if no node confirmed it. */
export const payloadSigned = (s: EvmState) => s.broadcasts.some((b) => b.kind === 'payload');
export const lastBroadcast = (s: EvmState): Broadcast | undefined => s.broadcasts[s.broadcasts.length - 1];
