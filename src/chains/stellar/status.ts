import { xdr } from '@stellar/stellar-base';
import type { StellarRpc } from './rpc-client.js';

export type StellarTxStatus =
  | { status: 'pending' }
  | { status: 'expired'; reason: string }
  | { status: 'confirmed'; ledger: number }
  | { status: 'failed'; ledger: number; reason: string; code: string };

/**
 * Outcome of one sendTransaction:
 * - submitted: accepted into the queue (or already known to the node), poll with checkStellarTx.
 * - retry: the node is busy (TRY_AGAIN_LATER); resend the same envelope later.
 * - rejected: the network refused the envelope; `code` is the result code (e.g. tx_bad_seq).
 *   `resyncSequence` means the relayer's sequence counter is out of step with the chain.
 */
export type StellarSubmitOutcome =
  | { outcome: 'submitted'; hash: string; duplicate: boolean }
  | { outcome: 'retry'; hash: string; reason: string }
  | { outcome: 'rejected'; hash: string; code: string; reason: string; resyncSequence: boolean };

/** txBadSeq -> tx_bad_seq, opUnderfunded -> op_underfunded */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Result code plus the first failing operation's code, e.g. "tx_failed (operations[0]: payment_underfunded)". */
export function describeTransactionResult(resultXdr: string): { code: string; reason: string } {
  let result: xdr.TransactionResult;
  try {
    result = xdr.TransactionResult.fromXDR(resultXdr, 'base64');
  } catch {
    return { code: 'unknown', reason: 'undecodable transaction result' };
  }
  const arm = result.result();
  const code = snake(arm.switch().name);
  let detail = '';
  if (arm.switch().name === 'txFeeBumpInnerFailed') {
    const inner = arm.innerResultPair().result().result();
    detail = ` (inner ${snake(inner.switch().name)}${opDetail(inner)})`;
  } else {
    detail = opDetail(arm);
  }
  return { code, reason: `${code}${detail}` };
}

function opDetail(arm: xdr.TransactionResultResult | xdr.InnerTransactionResultResult): string {
  const name = arm.switch().name;
  if (name !== 'txFailed' && name !== 'txSuccess') return '';
  const ops = arm.results() as xdr.OperationResult[];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (op.switch().name !== 'opInner') return ` (operations[${i}]: ${snake(op.switch().name)})`;
    const tr = op.tr();
    const opResult = tr.value() as { switch(): { name: string } };
    const opCode = opResult.switch().name;
    if (!/success/i.test(opCode)) return ` (operations[${i}]: ${snake(opCode)})`;
  }
  return '';
}

const RESYNC_CODES = new Set(['tx_bad_seq', 'tx_no_account']);

export async function submitStellarTx(rpc: StellarRpc, envelopeXdr: string): Promise<StellarSubmitOutcome> {
  const res = await rpc.sendTransaction(envelopeXdr);
  switch (res.status) {
    case 'PENDING':
      return { outcome: 'submitted', hash: res.hash, duplicate: false };
    case 'DUPLICATE':
      return { outcome: 'submitted', hash: res.hash, duplicate: true };
    case 'TRY_AGAIN_LATER':
      return { outcome: 'retry', hash: res.hash, reason: 'node asked to try again later' };
    case 'ERROR': {
      const { code, reason } = res.errorResultXdr
        ? describeTransactionResult(res.errorResultXdr)
        : { code: 'unknown', reason: 'rejected without a result code' };
      return { outcome: 'rejected', hash: res.hash, code, reason, resyncSequence: RESYNC_CODES.has(code) };
    }
    default:
      return { outcome: 'retry', hash: res.hash, reason: `unexpected sendTransaction status ${String(res.status)}` };
  }
}

/**
 * NOT_FOUND is 'pending' until the latest closed ledger is past `validUntil`
 * (the transaction's upper time bound): from then on it can never be included,
 * so it is 'expired'.
 */
export async function checkStellarTx(rpc: StellarRpc, hash: string, opts: { validUntil?: string | null } = {}): Promise<StellarTxStatus> {
  const res = await rpc.getTransaction(hash);
  switch (res.status) {
    case 'SUCCESS':
      return { status: 'confirmed', ledger: res.ledger ?? res.latestLedger };
    case 'FAILED': {
      const { code, reason } = res.resultXdr ? describeTransactionResult(res.resultXdr) : { code: 'unknown', reason: 'failed' };
      return { status: 'failed', ledger: res.ledger ?? res.latestLedger, code, reason };
    }
    default: {
      const closeTime = Number(res.latestLedgerCloseTime);
      const deadline = opts.validUntil ? Math.floor(Date.parse(opts.validUntil) / 1000) : undefined;
      if (deadline !== undefined && closeTime > deadline) {
        return { status: 'expired', reason: `not included before its time bound ${opts.validUntil}` };
      }
      return { status: 'pending' };
    }
  }
}

/** What getTransaction says about a set of hashes: the one that landed (at most one can), and the ledger window. */
export interface StellarLookUp {
  landed: { hash: string; status: 'confirmed'; ledger: number } | { hash: string; status: 'failed'; ledger: number; code: string; reason: string } | null;
  latestLedger: number;
  latestLedgerCloseTime: number;
  oldestLedger: number;
}

/** Looks up every hash (oldest signing first) and reports the one the chain recorded, if any. */
export async function lookUpStellarTxs(rpc: StellarRpc, hashes: string[]): Promise<StellarLookUp> {
  let window = { latestLedger: 0, latestLedgerCloseTime: 0, oldestLedger: 0 };
  for (const hash of hashes) {
    const res = await rpc.getTransaction(hash);
    window = { latestLedger: res.latestLedger, latestLedgerCloseTime: Number(res.latestLedgerCloseTime), oldestLedger: Number(res.oldestLedger ?? 0) };
    if (res.status === 'SUCCESS') return { ...window, landed: { hash, status: 'confirmed', ledger: res.ledger ?? res.latestLedger } };
    if (res.status === 'FAILED') {
      const { code, reason } = res.resultXdr ? describeTransactionResult(res.resultXdr) : { code: 'unknown', reason: 'failed' };
      return { ...window, landed: { hash, status: 'failed', ledger: res.ledger ?? res.latestLedger, code, reason } };
    }
  }
  return { ...window, landed: null };
}
