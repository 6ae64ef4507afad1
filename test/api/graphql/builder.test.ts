import { buildSchema, execute, parse, printSchema, type GraphQLObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { pageAsk } from '../../../src/api/graphql/builder.js';
import { schema } from '../../support/families.js';
import type { PageAsk } from '../../../src/core/page.js';

// pageAsk decides which reads a list runs (its rows, its count, both, or neither but the relayer's):
// a field that @skip or @include leaves out of the answer must not be read, as if it were absent.

/** What pageAsk answers for `query`, run against the service's own types. */
async function askOf(query: string, variableValues?: Record<string, unknown>): Promise<PageAsk> {
  const copy = buildSchema(printSchema(schema));
  let ask: PageAsk | undefined;
  (copy.getQueryType() as GraphQLObjectType).getFields().relayerTransactions.resolve = (_root, _args, _ctx, info) => {
    ask = pageAsk(info);
    return { items: [], pagination: { currentPage: 1, perPage: 10, totalItems: 0 } };
  };
  const result = await execute({ schema: copy, document: parse(query), variableValues });
  expect(result.errors).toBeUndefined();
  return ask as PageAsk;
}

const FRAGMENTS = 'fragment Rows on TransactionPage { items { id } } fragment Total on Pagination { n: totalItems }';
const list = (selection: string) => `query($yes: Boolean = true, $no: Boolean = false) { relayerTransactions(relayerId: "r") { ${selection} } } ${FRAGMENTS}`;

describe('pageAsk', () => {
  it('reads what the operation selects, through aliases and fragments', async () => {
    expect(await askOf(list('items { id } pagination { totalItems }'))).toEqual({ items: true, total: true });
    expect(await askOf(list('rows: items { id }'))).toEqual({ items: true, total: false });
    expect(await askOf(list('pagination { currentPage }'))).toEqual({ items: false, total: false });
    expect(await askOf(list('...Rows'))).toEqual({ items: true, total: false });
    expect(await askOf(list('pagination { ... on Pagination { ...Total } }'))).toEqual({ items: false, total: true });
  });

  it.each([
    ['items @skip(if: true) { id } pagination { totalItems }', 'pagination { totalItems }'],
    ['items @include(if: false) { id } pagination { totalItems }', 'pagination { totalItems }'],
    ['items @skip(if: $yes) { id } pagination { totalItems }', 'pagination { totalItems }'],
    ['items { id } pagination @include(if: $no) { totalItems }', 'items { id }'],
    ['items { id } pagination { totalItems @skip(if: true) currentPage }', 'items { id } pagination { currentPage }'],
    ['... @skip(if: true) { items { id } } pagination { totalItems }', 'pagination { totalItems }'],
    ['...Rows @include(if: $no) pagination { currentPage }', 'pagination { currentPage }'],
    ['items { id } pagination { ...Total @skip(if: $yes) }', 'items { id } pagination { currentPage }'],
  ])('%s reads as %s', async (skipping, absent) => {
    expect(await askOf(list(skipping))).toEqual(await askOf(list(absent)));
  });
});
