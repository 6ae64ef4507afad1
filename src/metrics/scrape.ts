// Gauges read at scrape time: from the database (one round of small queries, shared by every gauge
// of a scrape and cached for a moment, so frequent scrapes cost the database nothing more) and the
// relayers' balances (cached; a scrape waits for a refresh briefly and otherwise shows the last one).
import { Gauge } from 'prom-client';
import type { Runtime } from '../core/runtime.js';

const SNAPSHOT_MS = 2_000;
const BALANCE_MS = 30_000;
/** Longest a scrape waits for balances being read. */
const BALANCE_WAIT_MS = 1_000;

interface Snapshot {
  byStatus: { relayer_id: string; status: string; n: number }[];
  due: { n: number; age: number | null };
  undelivered: { n: number; age: number | null };
}

type Balance = { relayerId: string; network: string; value: number };

export function watchDatabase(rt: Runtime) {
  const registers = [rt.metrics.registry];
  let snapshot: { at: number; value: Promise<Snapshot> } | undefined;
  // A database that does not answer leaves these gauges out of the scrape; the others are still served.
  const read = (): Promise<Snapshot | undefined> => {
    if (!snapshot || Date.now() - snapshot.at > SNAPSHOT_MS) {
      const value = readSnapshot(rt);
      snapshot = { at: Date.now(), value };
      value.catch((err) => {
        if (snapshot?.value === value) snapshot = undefined;
        rt.log.warn({ err }, 'metrics: the database gauges could not be read');
      });
    }
    return snapshot.value.catch(() => undefined);
  };
  new Gauge({
    name: 'relayer_transactions',
    help: 'Transactions by relayer and current status (from the database)',
    labelNames: ['relayer_id', 'status'],
    registers,
    async collect() {
      const s = await read();
      this.reset();
      for (const r of s?.byStatus ?? []) this.set({ relayer_id: r.relayer_id, status: r.status }, r.n);
    },
  });
  const simple = (name: string, help: string, pick: (s: Snapshot) => number | null) =>
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        const s = await read();
        this.reset();
        if (s) this.set(pick(s) ?? 0);
      },
    });
  simple('relayer_transactions_due', 'Transactions due for a step now and not held by a worker', (s) => s.due.n);
  simple('relayer_transactions_oldest_due_age_seconds', 'How long the longest-waiting due transaction has been due (0 when none)', (s) => s.due.age);
  simple('relayer_webhook_deliveries_pending', 'Webhook deliveries not delivered yet (including those waiting to retry)', (s) => s.undelivered.n);
  simple('relayer_webhook_oldest_pending_age_seconds', 'Age of the oldest webhook delivery not delivered yet (0 when none)', (s) => s.undelivered.age);

  let balances: { at: number; value: Promise<unknown> } | undefined;
  let last: Balance[] = [];
  new Gauge({
    name: 'relayer_balance',
    help: "The relayer account's balance in the chain's smallest unit (wei, lamports, stroops), read at most every 30 s",
    labelNames: ['relayer_id', 'network'],
    registers,
    async collect() {
      if (!balances || Date.now() - balances.at > BALANCE_MS) {
        const value = readBalances(rt).then(
          (b) => (last = b),
          (err) => rt.log.warn({ err }, 'metrics: the relayers could not be read for their balances'),
        );
        balances = { at: Date.now(), value };
      }
      await Promise.race([balances.value, new Promise((r) => setTimeout(r, BALANCE_WAIT_MS).unref())]);
      this.reset();
      for (const b of last) this.set({ relayer_id: b.relayerId, network: b.network }, b.value);
    },
  });
}

async function readSnapshot(rt: Runtime): Promise<Snapshot> {
  const [byStatus, [due], [undelivered]] = await Promise.all([
    // The counters the database keeps (transaction_counts); a count that fell to 0 is left out, as
    // a count of the rows would leave it out.
    rt.db.prisma.$queryRaw<Snapshot['byStatus']>`SELECT relayer_id, status::text AS status, n::int AS n FROM transaction_counts WHERE n > 0`,
    rt.db.prisma.$queryRaw<Snapshot['due'][]>`SELECT count(*)::int AS n, extract(epoch FROM now() - min(due_at))::float8 AS age
      FROM transactions WHERE due_at <= now() AND (lease_until IS NULL OR lease_until < now())`,
    rt.db.prisma.$queryRaw<Snapshot['undelivered'][]>`SELECT count(*)::int AS n, extract(epoch FROM now() - min(created_at))::float8 AS age
      FROM deliveries WHERE status = 'pending'`,
  ]);
  return { byStatus, due, undelivered };
}

/** Each relayer's balance from its chain family; a relayer whose read fails is left out. */
async function readBalances(rt: Runtime): Promise<Balance[]> {
  const relayers = await rt.db.prisma.relayer.findMany();
  const read = await Promise.all(
    relayers.map(async (r) => {
      const family = rt.families.pipeline(r.networkType);
      if (!family) return [];
      try {
        return [{ relayerId: r.id, network: r.network, value: Number((await family.balance(rt, r)).balance) }];
      } catch (err) {
        rt.log.debug({ err, relayerId: r.id }, 'metrics: balance not read');
        return [];
      }
    }),
  );
  return read.flat();
}
