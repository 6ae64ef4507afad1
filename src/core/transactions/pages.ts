// Pages of a relayer's transaction list by number, at the cost of the first whatever their depth.
//
// Each runtime remembers, per relayer, marks along the list (newest first: created_at DESC, id
// DESC): every MARK_EVERY-th row, counted from the oldest end, with its rank from that end (how many
// rows are older). A page is then a seek to the mark at or just above its first row and an offset of
// less than MARK_EVERY index entries. Ranks from the oldest end survive new transactions, which are
// newer than nearly every row; what the marks rest on is checked against the database, never
// trusted:
// - A page read passes only if the list's length (from the counters, transaction_counts, in the same
//   statement) is the one the marks were taken at, and its mark's row is still there. Rows of a
//   relayer are only added, or deleted with the relayer: the same length means the same rows.
// - Another length (another instance, or this one, added rows) is checked by counting the rows
//   newer than an anchor row ANCHOR_DEPTH rows from the top: if all the rows added since are among
//   them, none went below the anchor, where every mark is, and the marks stand (the count costs
//   the rows added since and the anchor's depth, not the list's). Else (a transaction that started
//   before others committed after them, below the anchor; rows deleted; the relayer deleted and
//   made again) the marks are taken again from the whole list, once.
// Pages near the top, lists filtered by status (rows leave them as statuses change, which no
// counter shows) and lists without marks yet are read as before (readPageFromEnds).
import type { Transaction } from '../../generated/prisma/client.js';
import { ExpiringMap } from '../../lib/expiring.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { NEWEST, readPageFromEnds, TRANSACTION_COLUMNS } from './store.js';

/** Rows between two marks: a page skips fewer index entries than this. */
export const MARK_EVERY = 128;
/** The anchor's depth below the newest row: rows added later than this far down retake the marks. */
export const ANCHOR_DEPTH = 512;
/** Lists whose marks were not used for this long are let go. */
const IDLE_MS = 10 * 60_000;

/** A row's place in the list: its created_at as the database writes it, and its id. */
interface Key {
  at: string;
  id: string;
}

/** The marks of one list as of one snapshot of the database. */
interface Marks {
  /** The list's length then. */
  n: number;
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
}

const LISTS = slot('transaction page marks', () => new ExpiringMap<string, List>(IDLE_MS, { touch: true }));

const TOTAL = `(SELECT coalesce(sum(n), 0)::bigint FROM transaction_counts WHERE relayer_id = $1)`;

/** Every MARK_EVERY-th row from the oldest end up to the anchor, and the anchor, ANCHOR_DEPTH rows below the newest. */
const TAKE_MARKS = `WITH total AS MATERIALIZED (SELECT ${TOTAL} AS n)
  SELECT (SELECT n FROM total)::int AS n, x.rank::int AS rank, x.at, x.id FROM total LEFT JOIN (
    SELECT * FROM (SELECT created_at::text AS at, id, row_number() OVER (ORDER BY created_at, id) - 1 AS rank
      FROM transactions WHERE relayer_id = $1) r
    WHERE (rank % $2 = 0 AND rank <= (SELECT n FROM total) - 1 - $3) OR rank = (SELECT n FROM total) - 1 - $3
  ) x ON true ORDER BY x.rank`;

/**
 * The check of marks taken when the list had $4 rows, $6 of them newer than the anchor ($2, $3):
 * the length now, how many rows are newer than the anchor now (read no further than the marks
 * being right needs, plus one), and those of them that make new marks and the new anchor ($5 from
 * the top), each with its depth from the top.
 */
const CHECK_MARKS = `WITH total AS MATERIALIZED (SELECT ${TOTAL} AS n),
  top AS MATERIALIZED (SELECT at, id, row_number() OVER () - 1 AS depth FROM (
    SELECT created_at::text AS at, id FROM transactions WHERE relayer_id = $1 AND (created_at, id) > ($2::timestamp(3), $3::text)
    ORDER BY ${NEWEST} LIMIT greatest((SELECT n FROM total) - $4::bigint + $6::bigint + 1, 0)) t)
  SELECT (SELECT n FROM total)::int AS n, (SELECT count(*) FROM top)::int AS c, x.depth::int AS depth, x.at, x.id
  FROM total LEFT JOIN (SELECT * FROM top WHERE depth = $5 OR (depth > $5 AND ((SELECT n FROM total) - 1 - depth) % $7 = 0)) x ON true
  ORDER BY x.depth DESC`;

/**
 * `take` rows from `skip` rows past the mark ($3, $4), newest first, if the list still has the
 * length the marks were taken at ($2) and the mark's row is still there; none otherwise.
 */
const PAGE_FROM_MARK = `WITH ok AS MATERIALIZED (SELECT ${TOTAL} = $2::bigint
    AND EXISTS (SELECT 1 FROM transactions WHERE id = $4 AND relayer_id = $1 AND created_at = $3::timestamp(3)) AS ok),
  ids AS (SELECT id FROM transactions WHERE relayer_id = $1 AND (SELECT ok FROM ok) AND (created_at, id) <= ($3::timestamp(3), $4::text)
    ORDER BY ${NEWEST} OFFSET $5::bigint LIMIT $6::bigint)
  SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id IN (SELECT id FROM ids) ORDER BY ${NEWEST}`;

/**
 * A page of a relayer's transactions (optionally of one status), newest first: `take` rows after
 * the first `skip`, exactly as ORDER BY created_at DESC, id DESC OFFSET skip LIMIT take reads them.
 */
export async function readPage(
  rt: Runtime,
  relayerId: string,
  status: Transaction['status'] | null | undefined,
  skip: number,
  take: number,
): Promise<Transaction[]> {
  // Near the top a page is as cheap read from there.
  if (status || skip < ANCHOR_DEPTH + MARK_EVERY) return readPageFromEnds(rt, relayerId, status, skip, take);
  const lists = rt.state(LISTS);
  const list = lists.getOrCreate(relayerId, () => ({ marks: null, busy: null }));
  for (let tries = 0; tries < 3; tries++) {
    if (!list.marks) await settle(list, () => takeMarks(rt, relayerId, list));
    const m = list.marks;
    if (!m || skip >= m.n) break;
    // The rank from the oldest end of the page's first row, and the nearest mark at or above it.
    const first = m.n - 1 - skip;
    const i = lowerBound(m.ranks, first);
    if (i === m.ranks.length) break;
    const rows = await rt.db.read<Transaction>(PAGE_FROM_MARK, [relayerId, m.n, m.keys[i].at, m.keys[i].id, m.ranks[i] - first, take], {
      prepare: true,
    });
    // The page is never empty when the check passed (skip < n).
    if (rows.length > 0) return rows;
    await settle(list, () => (list.marks === m ? checkMarks(rt, relayerId, list, m) : Promise.resolve()));
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
async function takeMarks(rt: Runtime, relayerId: string, list: List) {
  const rows = await rt.db.read<{ n: number; rank: number | null; at: string | null; id: string | null }>(TAKE_MARKS, [relayerId, MARK_EVERY, ANCHOR_DEPTH], {
    prepare: true,
  });
  const n = rows[0]?.n ?? 0;
  const found = rows.filter((r) => r.rank !== null) as { rank: number; at: string; id: string }[];
  const anchor = found.find((r) => r.rank === n - 1 - ANCHOR_DEPTH);
  // A list too short for an anchor has its pages read from its ends.
  list.marks = anchor
    ? {
        n,
        keys: found.filter((r) => r !== anchor || r.rank % MARK_EVERY === 0).map((r) => ({ at: r.at, id: r.id })),
        ranks: found.filter((r) => r !== anchor || r.rank % MARK_EVERY === 0).map((r) => r.rank),
        anchor: { at: anchor.at, id: anchor.id },
        above: ANCHOR_DEPTH,
      }
    : null;
}

/**
 * Checks marks taken when the list was shorter: they stand if every row added since is newer than
 * the anchor; then marks are added down from the new top and the anchor moves up. Else they are
 * taken again.
 */
async function checkMarks(rt: Runtime, relayerId: string, list: List, m: Marks) {
  const rows = await rt.db.read<{ n: number; c: number; depth: number | null; at: string | null; id: string | null }>(
    CHECK_MARKS,
    [relayerId, m.anchor.at, m.anchor.id, m.n, ANCHOR_DEPTH, m.above, MARK_EVERY],
    { prepare: true },
  );
  const { n, c } = rows[0];
  // The same length: the page read failed for its mark's row, gone (the relayer made anew).
  if (n <= m.n || c - m.above !== n - m.n) return takeMarks(rt, relayerId, list);
  const found = rows.filter((r) => r.depth !== null) as { depth: number; at: string; id: string }[];
  const anchor = found.find((r) => r.depth === ANCHOR_DEPTH);
  const added = found.filter((r) => r.depth >= ANCHOR_DEPTH && (n - 1 - r.depth) % MARK_EVERY === 0);
  list.marks = {
    n,
    keys: [...m.keys, ...added.map((r) => ({ at: r.at, id: r.id }))],
    ranks: [...m.ranks, ...added.map((r) => n - 1 - r.depth)],
    ...(anchor ? { anchor: { at: anchor.at, id: anchor.id }, above: ANCHOR_DEPTH } : { anchor: m.anchor, above: c }),
  };
}
