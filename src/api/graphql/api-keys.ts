import { createApiKey, deleteApiKey, getApiKey, listApiKeys } from '../../core/access/keys.js';
import type { ApiKey as ApiKeyRow } from '../../generated/prisma/client.js';
import { RATE_LIMITED } from './rate-limit.js';
import type { SchemaParts } from './parts.js';
import { needs, needsSome, readNeed } from './access.js';

/** API keys: their records (never the key, but once at creation), list, permissions, create and delete. */
export function apiKeyTypes({ builder, pageArgs, pageOf }: SchemaParts) {
  const ApiKey = builder.prismaObject('ApiKey', {
    extensions: readNeed<{ id: string }>('api_key', (k) => k.id),
    description: 'An API key and what it may do; the key itself is shown only once, when it is created.',
    fields: (t) => ({
      id: t.exposeID('id'),
      name: t.exposeString('name'),
      permissions: t.stringList({ description: '<resource>:<id or all>:<action> (docs/api-keys.md).', resolve: (k) => k.permissions as string[] }),
      allowedOrigins: t.stringList({ description: 'Origins browsers may call from ("*": any).', resolve: (k) => k.allowedOrigins as string[] }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
    }),
  });

  const CreatedApiKey = builder.objectRef<{ key: ApiKeyRow; value: string }>('CreatedApiKey').implement({
    description: 'A new API key: `value` is the key, shown this once only.',
    fields: (t) => ({
      id: t.string({ resolve: (c) => c.key.id }),
      name: t.string({ resolve: (c) => c.key.name }),
      permissions: t.stringList({ resolve: (c) => c.key.permissions as string[] }),
      allowedOrigins: t.stringList({ resolve: (c) => c.key.allowedOrigins as string[] }),
      createdAt: t.field({ type: 'DateTime', resolve: (c) => c.key.createdAt }),
      value: t.string({ description: 'The key (Authorization: Bearer <value>); it is not stored and cannot be read again.', resolve: (c) => c.value }),
    }),
  });

  const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
    fields: (t) => ({
      name: t.string({ required: true }),
      permissions: t.stringList({ required: true, description: '<resource>:<id or all>:<action>, e.g. relayer:all:execute.' }),
      allowedOrigins: t.stringList({ required: false, description: 'Default ["*"].' }),
    }),
  });

  const ApiKeyPage = pageOf('ApiKeyPage', ApiKey);

  builder.queryFields((t) => ({
    apiKeys: t.field({
      type: ApiKeyPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'api_key'),
      resolve: (_, a, ctx) => listApiKeys(ctx.rt, ctx.caller, a.page, a.perPage),
    }),
    apiKeyPermissions: t.stringList({
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'api_key', String(a.id), 'read'),
      resolve: async (_, a, ctx) => (await getApiKey(ctx.rt, String(a.id))).permissions as string[],
    }),
  }));

  builder.mutationFields((t) => ({
    createApiKey: t.field({
      type: CreatedApiKey,
      directives: RATE_LIMITED,
      args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
      // And only permissions the caller holds itself (checked by createApiKey).
      authScopes: (_, __, ctx) => needs(ctx, 'api_key', '*', 'manage'),
      resolve: (_, a, ctx) => createApiKey(ctx.rt, ctx.caller, a.input),
    }),
    deleteApiKey: t.id({
      description: 'Deletes the key: refused at once on every instance. Answers its id.',
      directives: RATE_LIMITED,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'api_key', String(a.id), 'manage'),
      resolve: (_, a, ctx) => deleteApiKey(ctx.rt, String(a.id)),
    }),
  }));
}
