// Pages of a relayer's transaction list by number, at the cost of the first whatever their depth.
//
// Each runtime remembers, per relayer and per relayer and status, marks along the list (newest
// first: created_at DESC, id DESC): every MARK_EVERY-th row, counted from the oldest end, with its
// rank from that end (how many rows are older). A page is then a seek to the mark at or just above
// its first row and an offset of less than MARK_EVERY index entries. Ranks from the oldest end
// survive new transactions, which are newer than nearly every row; what the marks rest on is
// checked against the database, never trusted:
// - A page read passes only if the list's length and the count of rows that ever left it (both
//   from the counters, transaction_counts, kept by triggers, in the same statement) are the ones the
//   marks were taken at, and its mark's row is still there. Rows leave a relayer's whole list when
//   deleted (`removed`), and a status's list also when they change status (`gone`); the count only
//   grows, so no row left and as many are there: the same rows.
// - Another length with no row gone (another instance, or this one, added rows, or moved them into
//   the status) is checked by counting the rows newer than an anchor row ANCHOR_DEPTH rows from the
//   top: if all the rows added since are among them, none went below the anchor, where every mark
//   is, and the marks stand (the count costs the rows added since and the anchor's depth, not the
//   list's). Else (a transaction that started before others committed after them, below the
//   anchor; an old row confirmed late; rows gone; the relayer deleted and made again) the marks are
//   taken again from the whole list, once.
// Pages near the top and lists without marks yet are read as before (readPageFromEnds).
import type { Transaction } from '../../generated/prisma/client.js';
import { ExpiringMap } from '../../lib/expiring.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { NEWEST, readPageFromEnds, TRANSACTION_COLUMNS } from './store.js';

/** Rows between two marks: a page skips fewer index entries than this. */
export const MARK_EVERY = 128;
/** The anchor's depth below the newest row: rows added later than this far down retake the marks. */
export const ANCHOR_DEPTH = 512;
/**
 * Marks that must be taken again having served fewer pages than this (a list that rows keep
 * leaving: pending, sent) are let go instead, for CHURN_REST_MS: its pages are read from the list's
 * ends meanwhile, rather than paying a scan of the whole list for marks that would not last.
 */
const CHURN_PAGES = 4;
const CHURN_REST_MS = 2000;
/** Lists whose marks were not used for this long are let go. */
const IDLE_MS = 10 * 60_000;

/** A row's place in the list: its created_at as the database writes it, and its id. */
interface Key {
  at: string;
  id: string;
}

/** The marks of one list as of one snapshot of the database. */
interface Marks {
  /** The list's length then, and how many rows had ever left it (as text). */
  n: number;
  gone: string;
  /** Marks, oldest first, each with its rank from the oldest end; all at or below the anchor. */
  keys: Key[];
  ranks: number[];
  /** The anchor, and how many rows were newer than it. */
  anchor: Key;
  above: number;
}

interface List {
  marks: Marks | null;
  /** A retaking or check of the marks under way: others wait for it rather than run their own. */
  busy: Promise<void> | null;
  /** Pages read from the marks since they were taken. */
  served: number;
  /** Marks that were let go having served fewer than CHURN_PAGES pages are not taken again before this time. */
  restUntil: number;
}

const LISTS = slot('transaction page marks', () => new ExpiringMap<string, List>(IDLE_MS, { touch: true }));

/**
 * The statements of one kind of list: a relayer's whole list, or one status of it. Statements of a
 * filtered list take the status as their last parameter. Besides its length, each reads how many
 * rows ever left the list (as text: it only grows): for a status, `gone` (a status change, a
 * deletion, a move to another relayer), for the whole list, `removed` (a deletion or a move), both
 * kept by the same triggers as the lengths (migration 20261207220500_transaction_counts_gone).
 */
function statements(filtered: boolean) {
  const list = (status: number) => `relayer_id = $1${filtered ? ` AND status = $${status}::"TransactionStatus"` : ''}`;
  const counts = (status: number) =>
    `SELECT coalesce(sum(n), 0)::bigint AS n, coalesce(sum(${filtered ? 'gone' : 'removed'}), 0)::text AS gone FROM transaction_counts WHERE ${list(status)}`;
  return {
    /** Every MARK_EVERY-th row from the oldest end up to the anchor, and the anchor, ANCHOR_DEPTH rows below the newest. */
    take: `WITH total AS MATERIALIZED (${counts(4)})
  SELECT (SELECT n FROM total)::int AS n, (SELECT gone FROM total) AS gone, x.rank::int AS rank, x.at, x.id FROM total LEFT JOIN (
    SELECT * FROM (SELECT created_at::text AS at, id, row_number() OVER (ORDER BY created_at, id) - 1 AS rank
      FROM transactions WHERE ${list(4)}) r
    WHERE (rank % $2 = 0 AND rank <= (SELECT n FROM total) - 1 - $3) OR rank = (SELECT n FROM total) - 1 - $3
  ) x ON true ORDER BY x.rank`,
    /**
     * The check of marks taken when the list had $4 rows, $6 of them newer than the anchor ($2, $3):
     * the length (and rows gone) now, how many rows are newer than the anchor now (read no further
     * than the marks being right needs, plus one), and those of them that make new marks and the
     * new anchor ($5 from the top), each with its depth from the top.
     */
    check: `WITH total AS MATERIALIZED (${counts(8)}),
  top AS MATERIALIZED (SELECT at, id, row_number() OVER () - 1 AS depth FROM (
    SELECT created_at::text AS at, id FROM transactions WHERE ${list(8)} AND (created_at, id) > ($2::timestamp(3), $3::text)
    ORDER BY ${NEWEST} LIMIT greatest((SELECT n FROM total) - $4::bigint + $6::bigint + 1, 0)) t)
  SELECT (SELECT n FROM total)::int AS n, (SELECT gone FROM total) AS gone, (SELECT count(*) FROM top)::int AS c, x.depth::int AS depth, x.at, x.id
  FROM total LEFT JOIN (SELECT * FROM top WHERE depth = $5 OR (depth > $5 AND ((SELECT n FROM total) - 1 - depth) % $7 = 0)) x ON true
  ORDER BY x.depth DESC`,
    /**
     * `take` rows from `skip` rows past the mark ($3, $4), newest first, if the list still has the
     * length the marks were taken at ($2) with as many rows gone from it ($7): none left it and
     * none came, the same rows. None otherwise.
     */
    page: `WITH ok AS MATERIALIZED (SELECT c.n = $2::bigint AND c.gone = $7::text
    AND EXISTS (SELECT 1 FROM transactions WHERE id = $4 AND ${list(8)} AND created_at = $3::timestamp(3)) AS ok FROM (${counts(8)}) c),
  ids AS (SELECT id FROM transactions WHERE ${list(8)} AND (SELECT ok FROM ok) AND (created_at, id) <= ($3::timestamp(3), $4::text)
    ORDER BY ${NEWEST} OFFSET $5::bigint LIMIT $6::bigint)
  SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id IN (SELECT id FROM ids) ORDER BY ${NEWEST}`,
  };
}

const WHOLE = statements(false);
const FILTERED = statements(true);

type Status = Transaction['status'];

/** A list's statements, and the parameters they take last (a filtered list's status). */
const queriesOf = (status: Status | null | undefined) => ({ sql: status ? FILTERED : WHOLE, tail: status ? [status] : [] });

/**
 * A page of a relayer's transactions (optionally of one status), newest first: `take` rows after
 * the first `skip`, exactly as ORDER BY created_at DESC, id DESC OFFSET skip LIMIT take reads them.
 */
export async function readPage(rt: Runtime, relayerId: string, status: Status | null | undefined, skip: number, take: number): Promise<Transaction[]> {
  // Near the top a page is as cheap read from there.
  if (skip < ANCHOR_DEPTH + MARK_EVERY) return readPageFromEnds(rt, relayerId, status, skip, take);
  const lists = rt.state(LISTS);
  const list = lists.getOrCreate(status ? `${relayerId}\u0000${status}` : relayerId, () => ({ marks: null, busy: null, served: 0, restUntil: 0 }));
  const { sql, tail } = queriesOf(status);
  for (let tries = 0; tries < 3 && list.restUntil <= Date.now(); tries++) {
    if (!list.marks) await settle(list, () => takeMarks(rt, relayerId, status, list));
    const m = list.marks;
    if (!m || skip >= m.n) break;
    // The rank from the oldest end of the page's first row, and the nearest mark at or above it.
    const first = m.n - 1 - skip;
    const i = lowerBound(m.ranks, first);
    if (i === m.ranks.length) break;
    const rows = await rt.db.read<Transaction>(sql.page, [relayerId, m.n, m.keys[i].at, m.keys[i].id, m.ranks[i] - first, take, m.gone, ...tail], {
      prepare: true,
    });
    // The page is never empty when the check passed (skip < n).
    if (rows.length > 0) {
      list.served++;
      return rows;
    }
    await settle(list, () => (list.marks === m ? checkMarks(rt, relayerId, status, list, m) : Promise.resolve()));
  }
  return readPageFromEnds(rt, relayerId, status, skip, take);
}

/** Runs `work` unless another is under way, in which case waits for that one instead. */
async function settle(list: List, work: () => Promise<void>) {
  if (!list.busy) {
    list.busy = work().finally(() => {
      list.busy = null;
    });
  }
  await list.busy;
}

const lowerBound = (xs: number[], x: number) => {
  let [lo, hi] = [0, xs.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

/** Takes the marks from the whole list (its index alone): once per list, or after a change the check could not follow. */
async function takeMarks(rt: Runtime, relayerId: string, status: Status | null | undefined, list: List) {
  const { sql, tail } = queriesOf(status);
  const rows = await rt.db.read<{ n: number; gone: string; rank: number | null; at: string | null; id: string | null }>(
    sql.take,
    [relayerId, MARK_EVERY, ANCHOR_DEPTH, ...tail],
    { prepare: true },
  );
  const n = rows[0]?.n ?? 0;
  const found = rows.filter((r) => r.rank !== null) as { rank: number; at: string; id: string }[];
  const anchor = found.find((r) => r.rank === n - 1 - ANCHOR_DEPTH);
  const marks = found.filter((r) => r !== anchor || r.rank % MARK_EVERY === 0);
  list.served = 0;
  // A list too short for an anchor has its pages read from its ends.
  list.marks = anchor
    ? {
        n,
        gone: rows[0].gone,
        keys: marks.map((r) => ({ at: r.at, id: r.id })),
        ranks: marks.map((r) => r.rank),
        anchor: { at: anchor.at, id: anchor.id },
        above: ANCHOR_DEPTH,
      }
    : null;
}

/**
 * Checks marks taken when the list was shorter: they stand if no row left the list since (a
 * filtered list's `gone`, the same) and every row added since is newer than the anchor; then marks
 * are added down from the new top and the anchor moves up. Else they are taken again.
 */
async function checkMarks(rt: Runtime, relayerId: string, status: Status | null | undefined, list: List, m: Marks) {
  const { sql, tail } = queriesOf(status);
  const rows = await rt.db.read<{ n: number; gone: string; c: number; depth: number | null; at: string | null; id: string | null }>(
    sql.check,
    [relayerId, m.anchor.at, m.anchor.id, m.n, ANCHOR_DEPTH, m.above, MARK_EVERY, ...tail],
    { prepare: true },
  );
  const { n, gone, c } = rows[0];
  // Rows left the list, or came below the anchor: the marks are taken again, or let go a while if
  // they hardly served.
  if (n <= m.n || gone !== m.gone || c - m.above !== n - m.n) {
    if (list.served >= CHURN_PAGES) return takeMarks(rt, relayerId, status, list);
    list.marks = null;
    list.restUntil = Date.now() + CHURN_REST_MS;
    return;
  }
  const found = rows.filter((r) => r.depth !== null) as { depth: number; at: string; id: string }[];
  const anchor = found.find((r) => r.depth === ANCHOR_DEPTH);
  const added = found.filter((r) => r.depth >= ANCHOR_DEPTH && (n - 1 - r.depth) % MARK_EVERY === 0);
  list.marks = {
    n,
    gone,
    keys: [...m.keys, ...added.map((r) => ({ at: r.at, id: r.id }))],
    ranks: [...m.ranks, ...added.map((r) => n - 1 - r.depth)],
    ...(anchor ? { anchor: { at: anchor.at, id: anchor.id }, above: ANCHOR_DEPTH } : { anchor: m.anchor, above: c }),
  };
}
