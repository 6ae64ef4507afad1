import { RATE_LIMITED } from './rate-limit.js';
import { getRelayer, listRelayers, updateRelayer } from '../../core/relayers/service.js';
import type { RpcEndpoint } from '../../core/rpc-urls.js';
import type { SchemaParts } from './parts.js';
import { listWhere, needs, needsSome, readNeed } from './access.js';

/** Relayers: the NetworkType enum (the families offered), the Relayer type, its queries and update. */
export function relayerTypes({ builder, families, pageArgs, pageOf, enumType }: SchemaParts) {
  const NetworkTypeEnum = enumType('NetworkType', families.types);

  const RpcConfig = builder.objectRef<RpcEndpoint>('RpcConfig').implement({
    fields: (t) => ({ url: t.exposeString('url'), weight: t.exposeInt('weight') }),
  });

  const RpcConfigInput = builder.inputType('RpcConfigInput', {
    fields: (t) => ({ url: t.string({ required: true }), weight: t.int({ required: false }) }),
  });

  const DisabledReason = builder.objectRef<{ type: string; details: string }>('DisabledReason').implement({
    fields: (t) => ({ type: t.exposeString('type'), details: t.exposeString('details') }),
  });

  const Relayer = builder.prismaObject('Relayer', {
    extensions: readNeed<{ id: string }>('relayer', (r) => r.id),
    fields: (t) => ({
      id: t.exposeID('id'),
      name: t.exposeString('name'),
      network: t.exposeString('network'),
      networkType: t.field({ type: NetworkTypeEnum, resolve: (r) => r.networkType }),
      address: t.exposeString('address'),
      paused: t.exposeBoolean('paused'),
      systemDisabled: t.exposeBoolean('systemDisabled'),
      disabledReason: t.field({
        type: DisabledReason,
        nullable: true,
        resolve: (r) => (r.disabledReason as { type: string; details: string } | null) ?? null,
      }),
      signerId: t.exposeString('signerId'),
      notificationId: t.exposeString('notificationId', { nullable: true }),
      notification: t.relation('notification', { nullable: true }),
      customRpcUrls: t.field({
        type: [RpcConfig],
        nullable: true,
        resolve: (r) => (r.customRpcUrls as RpcEndpoint[] | null) ?? null,
      }),
      policies: t.field({
        type: 'JSON',
        description: "The relayer's policies in the config file's format (snake_case), per chain family.",
        resolve: (r) => r.policies,
      }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    }),
  });

  const RelayerPage = pageOf('RelayerPage', Relayer);

  builder.queryFields((t) => ({
    relayers: t.field({
      type: RelayerPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'relayer'),
      resolve: (_, a, ctx) => listRelayers(ctx.rt, a.page, a.perPage, listWhere(ctx.caller, 'relayer')),
    }),
    relayer: t.prismaField({
      type: 'Relayer',
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.id), 'read'),
      resolve: (_q, _, a, ctx) => getRelayer(ctx.rt, String(a.id)),
    }),
  }));

  const UpdateRelayerInput = builder.inputType('UpdateRelayerInput', {
    fields: (t) => ({
      name: t.string({ required: false }),
      paused: t.boolean({ required: false }),
      notificationId: t.string({ required: false, description: 'null detaches the notification.' }),
      customRpcUrls: t.field({ type: [RpcConfigInput], required: false, description: "null falls back to the network's RPC URLs." }),
      policies: t.field({ type: 'JSON', required: false, description: 'Policy fields to change (snake_case, as in the config file); null clears all.' }),
    }),
  });

  builder.mutationFields((t) => ({
    updateRelayer: t.prismaField({
      type: 'Relayer',
      directives: RATE_LIMITED,
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateRelayerInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.id), 'manage'),
      resolve: (_q, _, a, ctx) => updateRelayer(ctx.rt, String(a.id), a.input as never),
    }),
  }));
  return { NetworkTypeEnum, RpcConfigInput, Relayer };
}
