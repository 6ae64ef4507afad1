// The Stellar pipeline's decisions about sequence numbers, as pure functions of what the chain answered.

/** A transaction the chain recorded from the relayer's account at one sequence number. */
export interface RecordedAtSequence {
  /** Hash of the recorded envelope (the fee bump's, when it was wrapped in one). */
  hash: string;
  /** Hash of the inner transaction when the envelope is a fee bump, else the same as `hash`. */
  innerHash: string;
}

/**
 * Who consumed sequence number `n` of the relayer's account, judged on evidence only:
 * - unused: the account's sequence on chain is below `n`, so nothing is recorded at `n` yet.
 * - ours: the chain recorded one of this transaction's signings at `n` (it landed).
 * - other: the chain recorded a transaction at `n` that is none of this transaction's signings:
 *   it can never land (its number is gone), so it may take another number.
 * - unproven: `n` is used on chain, but what used it was not found; nothing may be concluded.
 */
export type SequenceAttribution = { kind: 'unused' } | { kind: 'ours'; hash: string } | { kind: 'other'; hash: string } | { kind: 'unproven'; reason: string };

export function attributeSequence(input: {
  n: bigint;
  chainSequence: bigint;
  /** What a search of the chain found at `n` from the relayer's account; null when it found nothing. */
  recorded: RecordedAtSequence | null;
  /** Every signing of this transaction (hex hashes), at whatever sequence each was made. */
  signings: string[];
}): SequenceAttribution {
  const { n, chainSequence, recorded } = input;
  if (chainSequence < n) return { kind: 'unused' };
  if (!recorded)
    return {
      kind: 'unproven',
      reason: `sequence number ${n} is used on chain (the account is at ${chainSequence}), but the transaction that used it was not found`,
    };
  const ours = new Set(input.signings.map((h) => h.toLowerCase()));
  for (const h of [recorded.hash, recorded.innerHash]) if (ours.has(h.toLowerCase())) return { kind: 'ours', hash: h.toLowerCase() };
  return { kind: 'other', hash: recorded.hash.toLowerCase() };
}

/**
 * Where a transaction whose number `n` the network refused (tx_bad_seq) goes next, once its
 * number's attribution is known:
 * - landed: one of its signings used `n`: track it.
 * - up: another transaction used `n`: take a new number above the counter and the chain.
 * - retry: `n` is the next valid number (the refusal was a race) or transactions below may still
 *   land: send again later.
 * - down: `n` is above the next valid number and nothing below can land: take the next valid one.
 * - hold: no proof of who used `n`: keep it, and report it for a person to decide.
 */
export type SequenceMove =
  | { kind: 'landed'; hash: string }
  | { kind: 'up'; target: bigint; usedBy: string }
  | { kind: 'down'; target: bigint }
  | { kind: 'retry' }
  | { kind: 'hold'; reason: string };

export function nextSequenceMove(input: {
  n: bigint;
  chainSequence: bigint;
  attribution: SequenceAttribution;
  /** The relayer's counter: the next number it hands out (null when unset). */
  counter: bigint | null;
  /** Whether a transaction holding a number between chainSequence and n may still land. */
  openBelow: boolean;
}): SequenceMove {
  const { n, chainSequence, attribution: a, counter } = input;
  switch (a.kind) {
    case 'ours':
      return { kind: 'landed', hash: a.hash };
    case 'unproven':
      return { kind: 'hold', reason: a.reason };
    case 'other': {
      const next = chainSequence + 1n;
      return { kind: 'up', target: counter !== null && counter > next ? counter : next, usedBy: a.hash };
    }
    case 'unused':
      if (n === chainSequence + 1n || input.openBelow) return { kind: 'retry' };
      return { kind: 'down', target: chainSequence + 1n };
  }
}
