import { RATE_LIMITED } from './rate-limit.js';
import { readiness } from '../../core/health.js';
import { getNetwork, listNetworks, maskRpcUrl, updateNetwork, type NetworkView } from '../../core/networks.js';
import { createRelayer, deleteRelayer, relayerBalance, relayerStatus, type RelayerBalance, type RelayerStatus } from '../../core/relayers/manage.js';
import { createSigner, deleteSigner, getSigner, listSigners, updateSigner, type SignerView } from '../../core/signers.js';
import { cancelPendingTransactions, type CancelPendingResult } from '../../core/transactions/cancel.js';
import { getTransactionByNonce } from '../../core/transactions/service.js';
import type { RpcEndpoint } from '../../core/rpc-urls.js';
import type { SchemaParts } from './parts.js';
import type { relayerTypes } from './relayers.js';
import { listTest, needs, needsSome, OPEN, readNeed } from './access.js';

/** Readiness, relayer management, signers and networks. */
export function entityTypes({ builder, pageArgs, pageOf }: SchemaParts, { NetworkTypeEnum, RpcConfigInput }: ReturnType<typeof relayerTypes>) {
  // The operations of OpenZeppelin Relayer's API beyond the interface spec: readiness, relayer
  // create/delete/status/balance, transactions by nonce and the cancel of all pending ones, signers
  // and networks. The REST routes (rest/routes.ts) run these fields.

  builder.queryField('readiness', (t) =>
    t.field({
      type: 'JSON',
      description:
        'Database, Redis (when configured) and the RPC of each network in use; cached a few seconds. `ready` false names the failing component in `reason`.',
      authScopes: OPEN,
      resolve: (_, __, ctx) => readiness(ctx.rt),
    }),
  );

  // --- relayers ---

  const RelayerStatusRef = builder.objectRef<RelayerStatus>('RelayerStatus').implement({
    fields: (t) => ({
      networkType: t.field({ type: NetworkTypeEnum, resolve: (s) => s.networkType as never }),
      balance: t.field({ type: 'BigInt', description: "The account's native balance in the chain's smallest unit.", resolve: (s) => s.balance }),
      nonce: t.field({
        type: 'BigInt',
        nullable: true,
        description: 'EVM: the next nonce; Stellar: the next sequence number; Solana: null.',
        resolve: (s) => s.nonce,
      }),
      pendingTransactionsCount: t.exposeInt('pendingTransactionsCount', { description: 'Transactions not final yet.' }),
      lastConfirmedTransactionTimestamp: t.expose('lastConfirmedTransactionTimestamp', { type: 'DateTime', nullable: true }),
      paused: t.exposeBoolean('paused'),
      systemDisabled: t.exposeBoolean('systemDisabled'),
    }),
  });

  const RelayerBalanceRef = builder.objectRef<RelayerBalance>('RelayerBalance').implement({
    fields: (t) => ({
      balance: t.field({ type: 'BigInt', resolve: (b) => b.balance }),
      unit: t.exposeString('unit', { description: 'wei, lamports or stroops.' }),
    }),
  });

  const CreateRelayerInput = builder.inputType('CreateRelayerInput', {
    description: 'A relayer as a config file entry has it (checked the same way); the address comes from the signer.',
    fields: (t) => ({
      id: t.string({ required: false, description: 'Default: a new UUID.' }),
      name: t.string({ required: false }),
      network: t.string({ required: false }),
      networkType: t.field({ type: NetworkTypeEnum, required: false }),
      paused: t.boolean({ required: false }),
      signerId: t.string({ required: false }),
      notificationId: t.string({ required: false }),
      customRpcUrls: t.field({ type: [RpcConfigInput], required: false }),
      policies: t.field({ type: 'JSON', required: false }),
    }),
  });

  const CancelPendingRef = builder.objectRef<CancelPendingResult>('CancelPendingResult').implement({
    fields: (t) => ({
      queuedForCancellationTransactionIds: t.exposeStringList('queuedForCancellationTransactionIds'),
      failedToQueueTransactionIds: t.exposeStringList('failedToQueueTransactionIds'),
      totalProcessed: t.exposeInt('totalProcessed'),
    }),
  });

  builder.queryFields((t) => ({
    relayerStatus: t.field({
      type: RelayerStatusRef,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.id), 'read'),
      resolve: (_, a, ctx) => relayerStatus(ctx.rt, String(a.id)),
    }),
    relayerBalance: t.field({
      type: RelayerBalanceRef,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.id), 'read'),
      resolve: (_, a, ctx) => relayerBalance(ctx.rt, String(a.id)),
    }),
    transactionByNonce: t.prismaField({
      type: 'Transaction',
      args: { relayerId: t.arg.id({ required: true }), nonce: t.arg({ type: 'Long', required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'read'),
      resolve: (_q, _, a, ctx) => getTransactionByNonce(ctx.rt, String(a.relayerId), a.nonce),
    }),
  }));

  builder.mutationFields((t) => ({
    createRelayer: t.prismaField({
      type: 'Relayer',
      args: { input: t.arg({ type: CreateRelayerInput, required: true }) },
      // Without an id (a UUID is made) it needs the permission on all relayers.
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', a.input.id ?? '*', 'manage'),
      resolve: (_q, _, a, ctx) => createRelayer(ctx.rt, a.input as never),
    }),
    deleteRelayer: t.boolean({
      description: 'Refused while the relayer has transactions in flight; a relayer of the config file stays deleted after a restart.',
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.id), 'manage'),
      resolve: async (_, a, ctx) => {
        await deleteRelayer(ctx.rt, String(a.id));
        return true;
      },
    }),
    cancelPendingTransactions: t.field({
      type: CancelPendingRef,
      directives: RATE_LIMITED,
      description: 'Cancels every transaction of the relayer not final yet, each as cancelTransaction does.',
      args: { relayerId: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => cancelPendingTransactions(ctx.rt, String(a.relayerId)),
    }),
  }));

  // --- signers ---

  const SignerRef = builder.objectRef<SignerView>('Signer').implement({
    extensions: readNeed<SignerView>('signer', (s) => s.id),
    description: 'A signer; its key material and secrets are never returned.',
    fields: (t) => ({
      id: t.exposeID('id'),
      type: t.exposeString('type', {
        description:
          'local (a keystore), or the custody holding the key: pkcs11, vault, vault_transit, aws_kms, google_cloud_kms, azure_key_vault, turnkey, cdp.',
      }),
      config: t.field({ type: 'JSON', description: "The config's fields that are not secret (none for local).", resolve: (s) => s.config }),
      source: t.exposeString('source', { description: 'config (the config file) or api.' }),
    }),
  });
  const SignerPage = pageOf('SignerPage', SignerRef);

  const CreateSignerInput = builder.inputType('CreateSignerInput', {
    description:
      'type local with config { keystore, passphrase }, local without config (the service generates a key), plain with config { key }, or a custody type with its config (docs/configuration.md). Stored encrypted with SIGNER_STORE_KEY.',
    fields: (t) => ({
      id: t.string({ required: false }),
      type: t.string({ required: true }),
      config: t.field({ type: 'JSON', required: false }),
    }),
  });

  const UpdateSignerInput = builder.inputType('UpdateSignerInput', {
    fields: (t) => ({ type: t.string({ required: false }), config: t.field({ type: 'JSON', required: true }) }),
  });

  builder.queryFields((t) => ({
    signers: t.field({
      type: SignerPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'signer'),
      resolve: (_, a, ctx) => listSigners(ctx.rt, a.page, a.perPage, listTest(ctx.caller, 'signer')),
    }),
    signer: t.field({
      type: SignerRef,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'signer', String(a.id), 'read'),
      resolve: (_, a, ctx) => getSigner(ctx.rt, String(a.id)),
    }),
  }));

  builder.mutationFields((t) => ({
    createSigner: t.field({
      type: SignerRef,
      args: { input: t.arg({ type: CreateSignerInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'signer', a.input.id ?? '*', 'manage'),
      resolve: (_, a, ctx) => createSigner(ctx.rt, a.input as never),
    }),
    updateSigner: t.field({
      type: SignerRef,
      description: 'Replaces the key of a signer no relayer uses.',
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateSignerInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'signer', String(a.id), 'manage'),
      resolve: (_, a, ctx) => updateSigner(ctx.rt, String(a.id), a.input as never),
    }),
    deleteSigner: t.boolean({
      description: 'Refused while a relayer uses the signer.',
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'signer', String(a.id), 'manage'),
      resolve: async (_, a, ctx) => {
        await deleteSigner(ctx.rt, String(a.id));
        return true;
      },
    }),
  }));

  // --- networks ---

  const MaskedRpc = builder.objectRef<RpcEndpoint>('MaskedRpcConfig').implement({
    fields: (t) => ({
      url: t.string({ description: 'Path and query hidden (they often hold an API key).', resolve: (r) => maskRpcUrl(r.url) }),
      weight: t.exposeInt('weight'),
    }),
  });

  const NetworkRef = builder.objectRef<NetworkView>('Network').implement({
    extensions: readNeed<NetworkView>('network', (n) => n.id),
    fields: (t) => ({
      id: t.exposeID('id', { description: '"type:name".' }),
      name: t.exposeString('name'),
      networkType: t.field({ type: NetworkTypeEnum, resolve: (n) => n.type }),
      rpcUrls: t.field({ type: [MaskedRpc], resolve: (n) => n.rpcUrls }),
      chainId: t.int({ nullable: true, resolve: (n) => n.chainId ?? null }),
      requiredConfirmations: t.exposeInt('requiredConfirmations'),
      symbol: t.string({ nullable: true, resolve: (n) => n.symbol ?? null }),
      features: t.exposeStringList('features'),
      tags: t.exposeStringList('tags'),
      isTestnet: t.exposeBoolean('isTestnet'),
      averageBlocktimeMs: t.int({ nullable: true, resolve: (n) => n.averageBlocktimeMs ?? null }),
      explorerUrls: t.stringList({ nullable: true, resolve: (n) => (n.fields.explorer_urls as string[] | undefined) ?? null }),
      passphrase: t.string({ nullable: true, description: 'Stellar networks.', resolve: (n) => n.passphrase ?? null }),
      horizonUrl: t.string({
        nullable: true,
        description: 'Stellar networks: the Horizon that prices gasless fees, as configured (mainnet and testnet default to the public ones).',
        resolve: (n) => (n.fields.horizon_url as string | undefined) ?? null,
      }),
    }),
  });
  const NetworkPage = pageOf('NetworkPage', NetworkRef);

  const UpdateNetworkInput = builder.inputType('UpdateNetworkInput', {
    fields: (t) => ({ rpcUrls: t.field({ type: ['JSON'], required: false, description: 'URLs, or { url, weight } objects; they replace the list.' }) }),
  });

  builder.queryFields((t) => ({
    networks: t.field({
      type: NetworkPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'network'),
      resolve: (_, a, ctx) => listNetworks(ctx.rt, a.page, a.perPage, listTest(ctx.caller, 'network')),
    }),
    network: t.field({
      type: NetworkRef,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'network', String(a.id), 'read'),
      resolve: (_, a, ctx) => getNetwork(ctx.rt, String(a.id)),
    }),
  }));

  builder.mutationField('updateNetwork', (t) =>
    t.field({
      type: NetworkRef,
      description: "Changes a network's RPC URLs; kept in the database and applied over the config file's at every start.",
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateNetworkInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'network', String(a.id), 'manage'),
      resolve: (_, a, ctx) => updateNetwork(ctx.rt, String(a.id), a.input),
    }),
  );
}
