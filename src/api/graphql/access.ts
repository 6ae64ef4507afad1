import type { GraphQLSchema } from 'graphql';
import { type Caller, stillValid } from '../../core/access/keys.js';
import { type Action, allows, allowsNeed, need, type Resource, visible, visibleTest, visibleWhere } from '../../core/access/permissions.js';
import { AppError } from './app-error.js';
import type { Context } from './context.js';
import { wrapResolvers } from './wrap.js';

// Where API-key permissions are enforced, for both surfaces (REST runs GraphQL operations): every
// root field names what it needs (`authScopes`), and each object type what reading it needs
// (`readNeed`), so a nested read (a relayer's notification) is checked too. buildSchema refuses a
// root field without.

export type Scopes = {
  /** A permission on one resource: `need()`'s string. */
  can: string;
  /** Some permission for `<resource>:<action>` on any id (a list, then filtered to what the key may see). */
  some: string;
  /** No permission (readiness): any caller, with a key or without. */
  open: boolean;
};

export const scopeAuth = {
  // Subscriptions are checked when they start (and each event by its type's scopes).
  authorizeOnSubscribe: true,
  authScopes: (ctx: Context) => ({
    can: (text: string) => allowsNeed(ctx.caller.grants, text),
    some: (text: string) => {
      const [resource, action] = text.split(':') as [Resource, Action];
      const v = visible(ctx.caller.grants, resource, action);
      return v === 'all' || v.ids.length + v.prefixes.length > 0;
    },
    open: true,
  }),
  // A check that failed by throwing (a delivery that does not exist) answers that error, not 403.
  unauthorizedError: (_parent: unknown, _ctx: unknown, _info: unknown, result: { failure: Failure }) =>
    thrown(result.failure) ?? new AppError('FORBIDDEN', 'Forbidden', lacking(result.failure)),
};

type Failure = { kind: string; scope?: string; parameter?: unknown; error?: Error | null; failures?: Failure[] };

const thrown = (f: Failure): Error | undefined => f.error ?? f.failures?.map(thrown).find(Boolean);

/** The permission a failed check wanted, for the error's detail. */
function lacking(f: Failure): string {
  if (f.kind === 'AuthScope' && f.scope === 'can') return `this API key lacks ${String(f.parameter)}`;
  if (f.kind === 'AuthScope' && f.scope === 'some') return `this API key has no ${String(f.parameter).replace(':', ' ')} permission`;
  return f.failures?.length ? lacking(f.failures[0]) : 'this API key lacks the permission';
}

/** What a field or type needs: `action` on the `resource` named `id` (the administrator skips the check). */
export const needs = (ctx: Context, resource: Resource, id: string, action: Action) => ctx.caller.admin || { can: need(resource, id, action) };

/** What a list needs: `action` on some `resource`; its rows are then those `listWhere` lets through. */
export const needsSome = (ctx: Context, resource: Resource, action: Action = 'read') => ctx.caller.admin || { some: `${resource}:${action}` };

export const OPEN = { open: true };

/** The `where` of a list for what the caller may read (undefined: everything). */
export const listWhere = (caller: Caller, resource: Resource) => (caller.admin ? undefined : visibleWhere(visible(caller.grants, resource)));

/** The same for a list kept in memory. */
export const listTest = (caller: Caller, resource: Resource) => visibleTest(visible(caller.grants, resource));

/** What reading an object of a type needs: `read` on the resource the object names. */
interface ReadNeed {
  resource: Resource;
  id(obj: unknown): string;
}

/** A type's extensions saying what reading one of its objects needs (checked by guardReads). */
export const readNeed = <T>(resource: Resource, id: (obj: T) => string) => ({ readNeed: { resource, id } as ReadNeed });

/**
 * Checks at every field of a type with a readNeed that the caller may read the object (the
 * administrator reads everything), refusing the field with FORBIDDEN otherwise. Pothos' type-level
 * authScopes did the same through a chain of steps and a request cache at every field: about 20 µs
 * of CPU a transaction sent through REST, a tenth of the route's.
 */
export function guardReads(schema: GraphQLSchema): GraphQLSchema {
  return wrapResolvers(schema, (_field, typeName) => {
    const mark = (schema.getType(typeName)?.extensions as { readNeed?: ReadNeed } | undefined)?.readNeed;
    if (!mark) return undefined;
    return (resolve) => (parent, args, ctx, info) => {
      if (!ctx.caller.admin) {
        const id = mark.id(parent);
        if (!allows(ctx.caller.grants, mark.resource, id, 'read'))
          throw new AppError('FORBIDDEN', 'Forbidden', `this API key lacks ${need(mark.resource, id, 'read')}`);
      }
      return resolve(parent, args, ctx, info);
    };
  });
}

/** Refuses a schema with a root field that does not say what it needs. */
export function checkEveryRootField(schema: GraphQLSchema) {
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()])
    for (const field of Object.values(root?.getFields() ?? {}))
      if (!(field.extensions?.pothosOptions as { authScopes?: unknown } | undefined)?.authScopes)
        throw new Error(`${root!.name}.${field.name} does not say what permission it needs (authScopes)`);
}

/** The events of a subscription for as long as its key exists: the first one after a deletion ends it. */
export async function* whileValid<T>(ctx: Context, events: AsyncIterable<T>): AsyncGenerator<T> {
  for await (const event of events) {
    if (!(await stillValid(ctx.rt, ctx.caller))) throw new AppError('FORBIDDEN', 'Forbidden', 'this API key was deleted');
    yield event;
  }
}
