// Finding, on chain, the transaction that used one sequence number of an account.
import { FeeBumpTransaction, TransactionBuilder } from '@stellar/stellar-base';
import type { RecordedAtSequence } from './decide.js';
import type { StellarRpc } from './rpc-client.js';

const PAGE = 200;

/**
 * Reads the network's transactions from `fromLedger` (at least the RPC's oldest) on, in ledger
 * order, for the one whose (inner) source is `account` at sequence `n`. Null when none was found
 * within `maxPages` pages: that proves nothing.
 */
export type FoundAtSequence = RecordedAtSequence & { status: string; ledger: number; resultXdr?: string };

export async function findAtSequence(
  rpc: StellarRpc,
  passphrase: string,
  opts: { account: string; n: bigint; fromLedger: number; oldestLedger: number; maxPages?: number },
): Promise<FoundAtSequence | null> {
  let page = await rpc.getTransactions({ startLedger: Math.max(opts.fromLedger, opts.oldestLedger), limit: PAGE });
  for (let i = 0; i < (opts.maxPages ?? 50); i++) {
    for (const t of page.transactions ?? []) {
      if (!t.envelopeXdr) continue;
      let env: ReturnType<typeof TransactionBuilder.fromXDR>;
      try {
        env = TransactionBuilder.fromXDR(t.envelopeXdr, passphrase);
      } catch {
        continue;
      }
      const inner = env instanceof FeeBumpTransaction ? env.innerTransaction : env;
      if (inner.source !== opts.account || BigInt(inner.sequence) !== opts.n) continue;
      return {
        hash: (t.txHash ?? env.hash().toString('hex')).toLowerCase(),
        innerHash: inner.hash().toString('hex'),
        status: t.status,
        ledger: t.ledger,
        resultXdr: t.resultXdr,
      };
    }
    if ((page.transactions?.length ?? 0) < PAGE || !page.cursor) return null;
    page = await rpc.getTransactions({ cursor: page.cursor, limit: PAGE });
  }
  return null;
}
