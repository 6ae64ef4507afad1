import SchemaBuilder, { type ObjectParam } from '@pothos/core';
import { collectSubFields } from '@graphql-tools/utils';
import { type FieldNode, getNamedType, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql';
import DirectivesPlugin from '@pothos/plugin-directives';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import PrismaPlugin from '@pothos/plugin-prisma';
import type PrismaTypes from '../../generated/pothos-types.js';
import { getDatamodel } from '../../generated/pothos-types.js';
import type { Context } from './context.js';
import type { PageAsk, Paged, Pagination } from '../../core/page.js';
import { BigIntScalar, DateTimeScalar, JSONScalar, LongScalar } from './scalars.js';
import { scopeAuth, type Scopes } from './access.js';
import { invalid } from '../../core/domain-error.js';

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
      // Without arguments: the deployment's window (rate-limit.ts).
      rateLimit: { locations: 'FIELD_DEFINITION'; args: { limit?: number; duration?: number } };
    };
    AuthScopes: Scopes;
  }>({
    // Scope auth first, so its checks run before any other plugin's resolver wrapping.
    plugins: [ScopeAuthPlugin, PrismaPlugin, DirectivesPlugin],
    scopeAuth,
    defaultFieldNullability: false,
    directives: { useGraphQLToolsUnorderedDirectives: true },
    prisma: {
      client: (ctx) => ctx.rt.db.prisma,
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
      currentPage: t.int({
        resolve: (p) => {
          if (p.currentPage === null) throw invalid('pagination.currentPage: a page asked by cursor (first/after) has no number; read pageInfo');
          return p.currentPage;
        },
      }),
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

/** The fields `nodes` select on a `type`, collected as execution does (fragments, @skip, @include, @defer). */
function subFields(info: GraphQLResolveInfo, type: GraphQLObjectType, nodes: readonly FieldNode[]): FieldNode[] {
  const { fields, patches } = collectSubFields(info.schema, info.fragments, info.variableValues, type, nodes as FieldNode[]);
  return [fields, ...patches.map((p) => p.fields)].flatMap((m) => [...m.values()].flat());
}

/** Which parts of a page field's result the operation selects: its rows, its total, both. */
export function pageAsk(info: GraphQLResolveInfo): PageAsk {
  const page = getNamedType(info.returnType) as GraphQLObjectType;
  const selected = subFields(info, page, info.fieldNodes);
  const pagination = selected.filter((f) => f.name.value === 'pagination');
  const paginationType = getNamedType(page.getFields().pagination.type) as GraphQLObjectType;
  return {
    // Edges and pageInfo are read from the rows too.
    items: selected.some((f) => ['items', 'edges', 'pageInfo'].includes(f.name.value)),
    total: pagination.length > 0 && subFields(info, paginationType, pagination).some((f) => f.name.value === 'totalItems'),
  };
}
