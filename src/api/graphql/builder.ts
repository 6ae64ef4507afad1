import SchemaBuilder, { type ObjectParam } from '@pothos/core';
import type { GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import DirectivesPlugin from '@pothos/plugin-directives';
import PrismaPlugin from '@pothos/plugin-prisma';
import type PrismaTypes from '../../generated/pothos-types.js';
import { getDatamodel } from '../../generated/pothos-types.js';
import type { Context } from './context.js';
import type { FamilySpecs } from '../../core/registry.js';
import type { GraphQLFields } from './fields.js';
import type { PageAsk, Paged, Pagination } from '../../core/page.js';
import { BigIntScalar, DateTimeScalar, JSONScalar, LongScalar } from './scalars.js';

/** A new schema builder with the scalars and root types; each schema has its own (src/api/graphql/schema.ts). */
export function createBuilder() {
  const builder = new SchemaBuilder<{
    Context: Context;
    PrismaTypes: PrismaTypes;
    DefaultFieldNullability: false;
    Scalars: {
      BigInt: { Input: bigint; Output: bigint | string | number };
      Long: { Input: bigint; Output: bigint | number };
      DateTime: { Input: Date; Output: Date };
      JSON: { Input: unknown; Output: unknown };
    };
    Directives: {
      rateLimit: { locations: 'FIELD_DEFINITION'; args: { limit: number; duration: number } };
    };
  }>({
    plugins: [PrismaPlugin, DirectivesPlugin],
    defaultFieldNullability: false,
    directives: { useGraphQLToolsUnorderedDirectives: true },
    prisma: {
      client: (ctx) => ctx.rt.prisma,
      dmmf: getDatamodel(),
      exposeDescriptions: false,
      filterConnectionTotalCount: true,
      onUnusedQuery: null,
    },
  });

  builder.addScalarType('BigInt', BigIntScalar);
  builder.addScalarType('Long', LongScalar);
  builder.addScalarType('DateTime', DateTimeScalar);
  builder.addScalarType('JSON', JSONScalar);

  builder.queryType({});
  builder.mutationType({});
  builder.subscriptionType({});
  return builder;
}

export type Builder = ReturnType<typeof createBuilder>;
type Types = Builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** The page arguments every list takes, and the page type of an item (with the one Pagination type), of one builder. */
export function paging(builder: Builder) {
  /** Page arguments shared by every list: pages start at 1. */
  const pageArgs = builder.args((t) => ({
    page: t.int({ required: false, description: 'Page number, from 1 (default 1).' }),
    perPage: t.int({ required: false, description: `Items per page (default 10, at most 100).` }),
  }));

  const PaginationRef = builder.objectRef<Pagination>('Pagination').implement({
    fields: (t) => ({
      currentPage: t.exposeInt('currentPage'),
      perPage: t.exposeInt('perPage'),
      totalItems: t.int({ resolve: (p) => p.totalItems() }),
    }),
  });

  /** A page of `item`s with its pagination: what every list field returns. */
  function pageOf(name: string, item: ObjectParam<Types>) {
    return builder.objectRef<Paged<unknown>>(name).implement({
      fields: (t) => ({
        items: t.field({ type: [item], resolve: (p) => p.items() as never }),
        pagination: t.field({ type: PaginationRef, resolve: (p) => p.pagination }),
      }),
    });
  }
  return { pageArgs, pageOf };
}

/** Which parts of a page field's result the operation selects: its rows, its total, both. */
export function pageAsk(info: GraphQLResolveInfo): PageAsk {
  const ask = { items: false, total: false };
  const visit = (set: SelectionSetNode | undefined, inPagination: boolean) => {
    for (const s of set?.selections ?? []) {
      if (s.kind === 'InlineFragment') visit(s.selectionSet, inPagination);
      else if (s.kind === 'FragmentSpread') visit(info.fragments[s.name.value]?.selectionSet, inPagination);
      else if (inPagination) ask.total ||= s.name.value === 'totalItems';
      else if (s.name.value === 'items') ask.items = true;
      else if (s.name.value === 'pagination') visit(s.selectionSet, true);
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet, false);
  return ask;
}

/** What the parts of one schema are built with: its builder, the chain families it offers, and helpers on that builder. */
export type SchemaParts = { builder: Builder; families: FamilySpecs } & ReturnType<typeof paging> & GraphQLFields;
