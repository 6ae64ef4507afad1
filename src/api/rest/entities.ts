import {
  RestCancelPendingTransactionsDocument,
  RestCreateRelayerDocument,
  RestCreateSignerDocument,
  RestDeleteRelayerDocument,
  RestDeleteSignerDocument,
  RestGetNetworkDocument,
  RestGetSignerDocument,
  RestListNetworksDocument,
  RestListSignersDocument,
  RestReadinessDocument,
  RestRelayerBalanceDocument,
  RestRelayerStatusDocument,
  RestTransactionByNonceDocument,
  RestUpdateNetworkDocument,
  RestUpdateSignerDocument,
  type RestNetworkFragment,
  type RestSignerFragment,
} from '../../generated/graphql.js';
import { z } from 'zod';
import { rpcConfigs } from '../../core/rpc-urls.js';
import { updateInput as networkUpdate } from '../../core/networks.js';
import type { FamilySpecs } from '../../core/registry.js';
import { createEntry } from '../../core/relayers/manage.js';
import { signerCreateVariants, signerInputs } from '../../core/signers.js';
import type { Custodies } from '../../signers/custody.js';
import { json } from './envelope.js';
import { int64 } from '../../lib/validate.js';
import { paging, snakeShape } from './fields.js';
import { paginationRecord, type JsonSchema, type RestRecords } from './records.js';
import { type Route, route } from './route.js';

// The routes of OpenZeppelin Relayer v1.8 beyond the interface spec, with the reference's paths,
// bodies and records (as @openzeppelin/relayer-sdk has them): readiness, relayer create/delete/
// status/balance, transactions by nonce and the cancel of all pending ones, signers, networks.

const relayer = { relayer_id: { gql: 'id', description: "The relayer's unique identifier." } };

/** A u128 as a JSON number (the reference's), keeping every digit. */
const jsonAmount = (v: string | number | bigint) => {
  const n = BigInt(v);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
};
const text = (v: unknown) => (v === null || v === undefined ? null : String(v));

const signerRecord = (s: RestSignerFragment) => ({ id: s.id, type: s.type, config: s.config, source: s.source });

function networkRecord(n: RestNetworkFragment): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: n.id,
    name: n.name,
    network_type: n.networkType,
    rpc_urls: n.rpcUrls,
    chain_id: n.chainId,
    required_confirmations: n.requiredConfirmations,
    symbol: n.symbol,
    features: n.features,
    tags: n.tags,
    is_testnet: n.isTestnet,
    average_blocktime_ms: n.averageBlocktimeMs,
    explorer_urls: n.explorerUrls,
    passphrase: n.passphrase,
    horizon_url: n.horizonUrl,
  };
  // Fields a network of this type does not have are left out, as the reference does.
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== null));
}

/** Routes beyond the transaction core (readiness, relayer management, signers, networks), with the records they show. */
export function entityRoutes({ transactionRecord, relayerRecord, policiesField }: RestRecords, types: FamilySpecs['types'], custodies: Custodies): Route[] {
  const relayerEntry = createEntry(types);
  const { createInput: signerCreate, updateInput: signerUpdate } = signerInputs(custodies);
  return [
    route({
      id: 'readiness',
      method: 'GET',
      path: '/api/v1/ready',
      tag: 'Health',
      summary: 'Readiness',
      description:
        'Needs no token. Checks the database, Redis (when configured) and the RPC of every network a relayer uses; the verdict is cached for 5 seconds. 200 when ready, 503 with `reason` naming the failing component otherwise. The body is the document itself, not the envelope.',
      document: RestReadinessDocument,
      field: { type: 'Query', name: 'readiness' },
      pathParams: {},
      public: true,
      status: 200,
      response: { schema: 'Readiness', list: false },
      errors: [503],
      result: (d) => ({ data: d.readiness }),
      respond: (d) => json((d.readiness as { ready: boolean }).ready ? 200 : 503, d.readiness),
    }),
    route({
      id: 'createRelayer',
      method: 'POST',
      path: '/api/v1/relayers',
      tag: 'Relayers',
      summary: 'Create a relayer',
      description:
        'Checked as a config file entry is; `address` comes from the signer. The relayer is kept in the database: restarting with the same config file does not remove it.',
      document: RestCreateRelayerDocument,
      field: { type: 'Mutation', name: 'createRelayer' },
      pathParams: {},
      body: {
        variable: 'input',
        description: 'The relayer, in the config file format.',
        // As a config file entry, but RPC URLs only as objects (GraphQL's RpcConfigInput).
        schema: relayerEntry.extend({
          id: relayerEntry.shape.id.nullable().meta({ description: 'Letters, digits, ".", "_", ":" and "-" (default: a new UUID).' }),
          network: relayerEntry.shape.network.meta({ description: "A network of the config file (of the relayer's type)." }),
          custom_rpc_urls: rpcConfigs.nullish(),
          policies: policiesField.nullish(),
        }),
        example: {
          id: 'my-relayer',
          name: 'My relayer',
          network: 'sepolia',
          network_type: 'evm',
          paused: false,
          signer_id: 'my-signer',
          policies: { min_balance: 0 },
        },
      },
      status: 201,
      response: { schema: 'Relayer', list: false },
      errors: [409],
      result: (d) => ({ data: relayerRecord(d.createRelayer) }),
    }),
    route({
      id: 'deleteRelayer',
      method: 'DELETE',
      path: '/api/v1/relayers/{relayer_id}',
      tag: 'Relayers',
      summary: 'Delete a relayer',
      description: 'Refused (400) while the relayer has transactions in flight. A relayer of the config file stays deleted after a restart.',
      document: RestDeleteRelayerDocument,
      field: { type: 'Mutation', name: 'deleteRelayer' },
      pathParams: relayer,
      status: 200,
      response: { schema: 'string', list: false },
      errors: [404],
      result: () => ({ data: 'Relayer deleted successfully' }),
    }),
    route({
      id: 'getRelayerStatus',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}/status',
      tag: 'Relayers',
      summary: "A relayer's status",
      description:
        'Balance (smallest unit, as text), the next nonce (EVM) or sequence number (Stellar), transactions not final yet, the last confirmation, and the flags.',
      document: RestRelayerStatusDocument,
      field: { type: 'Query', name: 'relayerStatus' },
      pathParams: relayer,
      status: 200,
      response: { schema: 'RelayerStatus', list: false },
      errors: [404],
      result: ({ relayerStatus: s }) => {
        const nonce = s.networkType === 'evm' ? { nonce: text(s.nonce) } : s.networkType === 'stellar' ? { sequence_number: text(s.nonce) } : {};
        return {
          data: {
            network_type: s.networkType,
            balance: String(s.balance),
            ...nonce,
            pending_transactions_count: s.pendingTransactionsCount,
            last_confirmed_transaction_timestamp: s.lastConfirmedTransactionTimestamp,
            paused: s.paused,
            system_disabled: s.systemDisabled,
          },
        };
      },
    }),
    route({
      id: 'getRelayerBalance',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}/balance',
      tag: 'Relayers',
      summary: "A relayer's balance",
      document: RestRelayerBalanceDocument,
      field: { type: 'Query', name: 'relayerBalance' },
      pathParams: relayer,
      status: 200,
      response: { schema: 'Balance', list: false },
      errors: [404],
      result: (d) => ({ data: { balance: jsonAmount(d.relayerBalance.balance), unit: d.relayerBalance.unit } }),
    }),
    route({
      id: 'getTransactionByNonce',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}/transactions/by-nonce/{nonce}',
      tag: 'Transactions',
      summary: 'Get a transaction by nonce',
      description: 'The nonce (EVM) or sequence number (Stellar) the transaction was given.',
      document: RestTransactionByNonceDocument,
      field: { type: 'Query', name: 'transactionByNonce' },
      pathParams: {
        relayer_id: { gql: 'relayerId', description: relayer.relayer_id.description },
        nonce: { gql: 'nonce', schema: int64, description: 'A non-negative integer (int64).' },
      },
      status: 200,
      response: { schema: 'Transaction', list: false },
      errors: [404],
      result: (d) => ({ data: transactionRecord(d.transactionByNonce) }),
    }),
    route({
      id: 'deletePendingTransactions',
      method: 'DELETE',
      path: '/api/v1/relayers/{relayer_id}/transactions/pending',
      tag: 'Transactions',
      summary: 'Cancel every pending transaction',
      description:
        'Cancels each transaction of the relayer that is not final (nor mined) as a single cancel does; those that cannot be canceled are listed as failed.',
      document: RestCancelPendingTransactionsDocument,
      field: { type: 'Mutation', name: 'cancelPendingTransactions' },
      pathParams: { relayer_id: { gql: 'relayerId', description: relayer.relayer_id.description } },
      status: 200,
      response: { schema: 'DeletePendingTransactions', list: false },
      errors: [404],
      result: ({ cancelPendingTransactions: c }) => ({
        data: {
          queued_for_cancellation_transaction_ids: c.queuedForCancellationTransactionIds,
          failed_to_queue_transaction_ids: c.failedToQueueTransactionIds,
          total_processed: c.totalProcessed,
        },
      }),
    }),
    route({
      id: 'listSigners',
      method: 'GET',
      path: '/api/v1/signers',
      tag: 'Signers',
      summary: 'List signers',
      document: RestListSignersDocument,
      field: { type: 'Query', name: 'signers' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'Signer', list: true },
      errors: [],
      result: (d) => ({ data: d.signers.items.map(signerRecord), pagination: paginationRecord(d.signers.pagination) }),
    }),
    route({
      id: 'getSigner',
      method: 'GET',
      path: '/api/v1/signers/{signer_id}',
      tag: 'Signers',
      summary: 'Get a signer',
      document: RestGetSignerDocument,
      field: { type: 'Query', name: 'signer' },
      pathParams: { signer_id: { gql: 'id', description: "The signer's id." } },
      status: 200,
      response: { schema: 'Signer', list: false },
      errors: [404],
      result: (d) => ({ data: signerRecord(d.signer) }),
    }),
    route({
      id: 'createSigner',
      method: 'POST',
      path: '/api/v1/signers',
      tag: 'Signers',
      summary: 'Create a signer',
      description:
        'type `local` with `config.keystore` and `config.passphrase` (a V3 keystore), `local` without config (the service generates a key), `plain` with `config.key`, or a custody type (`pkcs11`, `vault`, `vault_transit`, `aws_kms`, `google_cloud_kms`, `azure_key_vault`, `turnkey`, `cdp`) with its config, whose key is read once to check it. Stored encrypted with SIGNER_STORE_KEY and never returned.',
      document: RestCreateSignerDocument,
      field: { type: 'Mutation', name: 'createSigner' },
      pathParams: {},
      body: {
        variable: 'input',
        description: 'The signer.',
        schema: signerCreate,
        variants: signerCreateVariants(custodies),
        example: { id: 'new-signer', type: 'local' },
      },
      status: 201,
      response: { schema: 'Signer', list: false },
      errors: [409],
      result: (d) => ({ data: signerRecord(d.createSigner) }),
    }),
    route({
      id: 'updateSigner',
      method: 'PATCH',
      path: '/api/v1/signers/{signer_id}',
      tag: 'Signers',
      summary: 'Update a signer',
      description: 'Replaces the key of a signer no relayer uses (400 otherwise): `config` as on create.',
      document: RestUpdateSignerDocument,
      field: { type: 'Mutation', name: 'updateSigner' },
      pathParams: { signer_id: { gql: 'id', description: "The signer's id." } },
      body: {
        variable: 'input',
        description: 'The new key.',
        schema: signerUpdate,
        example: { type: 'local', config: {} },
      },
      status: 200,
      response: { schema: 'Signer', list: false },
      errors: [404],
      result: (d) => ({ data: signerRecord(d.updateSigner) }),
    }),
    route({
      id: 'deleteSigner',
      method: 'DELETE',
      path: '/api/v1/signers/{signer_id}',
      tag: 'Signers',
      summary: 'Delete a signer',
      description: 'Refused (400) while a relayer uses it. A signer of the config file stays deleted after a restart.',
      document: RestDeleteSignerDocument,
      field: { type: 'Mutation', name: 'deleteSigner' },
      pathParams: { signer_id: { gql: 'id', description: "The signer's id." } },
      status: 200,
      response: { schema: 'string', list: false },
      errors: [404],
      result: () => ({ data: 'Signer deleted successfully' }),
    }),
    route({
      id: 'listNetworks',
      method: 'GET',
      path: '/api/v1/networks',
      tag: 'Networks',
      summary: 'List networks',
      document: RestListNetworksDocument,
      field: { type: 'Query', name: 'networks' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'Network', list: true },
      errors: [],
      result: (d) => ({ data: d.networks.items.map(networkRecord), pagination: paginationRecord(d.networks.pagination) }),
    }),
    route({
      id: 'getNetwork',
      method: 'GET',
      path: '/api/v1/networks/{network_id}',
      tag: 'Networks',
      summary: 'Get a network',
      document: RestGetNetworkDocument,
      field: { type: 'Query', name: 'network' },
      pathParams: { network_id: { gql: 'id', description: 'The network id, "type:name" (for example "evm:sepolia").' } },
      status: 200,
      response: { schema: 'Network', list: false },
      errors: [404],
      result: (d) => ({ data: networkRecord(d.network) }),
    }),
    route({
      id: 'updateNetwork',
      method: 'PATCH',
      path: '/api/v1/networks/{network_id}',
      tag: 'Networks',
      summary: "Update a network's RPC URLs",
      description: "`rpc_urls` replaces the network's RPC URLs; kept in the database and applied over the config file's at every start.",
      document: RestUpdateNetworkDocument,
      field: { type: 'Mutation', name: 'updateNetwork' },
      pathParams: { network_id: { gql: 'id', description: 'The network id, "type:name".' } },
      body: {
        variable: 'input',
        description: 'The fields to change.',
        schema: z.strictObject(snakeShape(networkUpdate.shape)),
        example: { rpc_urls: [{ url: 'https://rpc.example.com', weight: 100 }] },
      },
      status: 200,
      response: { schema: 'Network', list: false },
      errors: [404],
      result: (d) => ({ data: networkRecord(d.updateNetwork) }),
    }),
  ];
}

const str: JsonSchema = { type: 'string' };
const int: JsonSchema = { type: 'integer' };
const bool: JsonSchema = { type: 'boolean' };
const strings: JsonSchema = { type: 'array', items: str };
const status: JsonSchema = { type: 'string', enum: ['healthy', 'degraded', 'unhealthy'] };
const pool: JsonSchema = { type: 'object', properties: { connected: bool, available: int, max_size: int, error: str } };

/** JSON Schemas of the records above, for the OpenAPI document's components. */
export const entitySchemas: Record<string, JsonSchema> = {
  Readiness: {
    type: 'object',
    required: ['ready', 'status', 'timestamp', 'components'],
    properties: {
      ready: bool,
      status,
      reason: { ...str, description: 'When not ready: the failing components and why.' },
      timestamp: { type: 'string', format: 'date-time' },
      components: {
        type: 'object',
        properties: {
          system: { type: 'object', properties: { status, fd_count: int, fd_limit: int, fd_usage_percent: int, close_wait_count: int } },
          database: { type: 'object', properties: { status, kind: str, error: str } },
          redis: { type: 'object', properties: { status, configured: bool, primary_pool: pool, reader_pool: pool, error: str } },
          queue: { type: 'object', properties: { status, error: str } },
          networks: { type: 'array', items: { type: 'object', properties: { id: str, status, error: str } } },
        },
      },
    },
  },
  RelayerStatus: {
    type: 'object',
    description: 'EVM relayers carry `nonce`, Stellar relayers `sequence_number`, Solana relayers neither.',
    required: ['network_type', 'balance', 'pending_transactions_count', 'paused', 'system_disabled'],
    properties: {
      network_type: { $ref: '#/components/schemas/NetworkType' },
      balance: { ...str, description: "In the chain's smallest unit (wei, lamports, stroops)." },
      nonce: str,
      sequence_number: str,
      pending_transactions_count: int,
      last_confirmed_transaction_timestamp: { type: ['string', 'null'], format: 'date-time' },
      paused: bool,
      system_disabled: bool,
    },
  },
  Balance: {
    type: 'object',
    required: ['balance', 'unit'],
    properties: { balance: { type: 'integer', format: 'u128' }, unit: { ...str, examples: ['wei', 'lamports', 'stroops'] } },
  },
  DeletePendingTransactions: {
    type: 'object',
    required: ['queued_for_cancellation_transaction_ids', 'failed_to_queue_transaction_ids', 'total_processed'],
    properties: { queued_for_cancellation_transaction_ids: strings, failed_to_queue_transaction_ids: strings, total_processed: int },
  },
  Signer: {
    type: 'object',
    description: 'A signer; its key material is never returned.',
    required: ['id', 'type', 'config'],
    properties: { id: str, type: { const: 'local' }, config: { type: 'object' }, source: { type: 'string', enum: ['config', 'api'] } },
  },
  Network: {
    type: 'object',
    description: 'A network; RPC URLs are shown without their path and query (which often hold an API key).',
    required: ['id', 'name', 'network_type', 'rpc_urls'],
    properties: {
      id: str,
      name: str,
      network_type: { $ref: '#/components/schemas/NetworkType' },
      rpc_urls: { type: 'array', items: { $ref: '#/components/schemas/RpcConfig' } },
      chain_id: int,
      required_confirmations: int,
      symbol: str,
      features: strings,
      tags: strings,
      is_testnet: bool,
      average_blocktime_ms: int,
      explorer_urls: strings,
      passphrase: str,
      horizon_url: str,
    },
  },
};
