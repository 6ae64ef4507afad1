import { Kind, parse, print, type DocumentNode } from 'graphql';
import {
  RestCreateNotificationDocument,
  RestDeleteNotificationDocument,
  RestGetNotificationDocument,
  RestGetRelayerDocument,
  RestGetTransactionDocument,
  RestListNotificationsDocument,
  RestListRelayersDocument,
  RestListTransactionsDocument,
  RestSendTransactionDocument,
  RestUpdateNotificationDocument,
  RestUpdateRelayerDocument,
  type RestTransactionFragment,
} from '../../generated/graphql.js';
import { z } from 'zod';
import { TransactionStatus } from '../../generated/prisma/enums.js';
import type { FamilySpec } from '../../core/family-spec.js';
import type { FamilySpecs } from '../../core/registry.js';
import type { Custodies } from '../../signers/custody.js';
import { createInput as notificationCreate, updateInput as notificationUpdate } from '../../core/notifications/service.js';
import { updateInput as relayerUpdate } from '../../core/relayers/service.js';
import { rpcConfigs } from '../../core/rpc-urls.js';
import { IDEMPOTENCY_KEY } from '../../core/transactions/service.js';
import { directRoutes } from './sign-and-forward.js';
import { paging, snakeShape } from './fields.js';
import { entityRoutes } from './entities.js';
import { apiKeyRoutes } from './api-keys.js';
import { pluginRoutes } from './plugins.js';
import { notificationRecord, orList, paginationRecord, restRecords } from './records.js';
import { type Output, type Route, route } from './route.js';

// The REST surface, one entry per route (route.ts): the single source of the adapter (handler.ts) and of the
// OpenAPI document (openapi.ts). Each route runs one named GraphQL operation on the shared schema.

const relayerId = { relayer_id: { gql: 'relayerId', description: "The relayer's unique identifier." } };

/**
 * Every field of the send shapes (spec 4.1), one per chain family, as its first family types it;
 * none is required here. The service checks the body against the shape of the relayer's type.
 */
function sendBody(families: readonly FamilySpec[]): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const f of families) for (const [k, v] of Object.entries(f.send.fields.shape)) shape[k] ??= (v as z.ZodType).optional();
  return z.strictObject(shape);
}

const idempotencyKey = {
  'idempotency-key': {
    gql: 'idempotencyKey',
    name: 'Idempotency-Key',
    schema: z
      .string()
      .regex(IDEMPOTENCY_KEY, 'must be 1 to 255 visible ASCII characters')
      .meta({ description: '1 to 255 visible ASCII characters: a retry with the same key and body returns the first transaction.' }),
  },
};

const evmExample = { value: 1000000000000000, to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', data: '0x', gas_limit: 21000, speed: 'fast' };

/** The REST routes (spec 4), their send shapes and records those of the chain families offered, their signer types those of the custodies. */
export function restRoutes(families: FamilySpecs, custodies: Custodies): Route[] {
  const records = restRecords(families);
  const { transactionRecord, relayerRecord, policiesField } = records;
  const sendFields = sendBody(families.list);

  const shapesByType = families.list.map((f) => `Shape ${f.send.letter}${f.send.restHint ? ` ${f.send.restHint}` : ''} for ${f.label} relayers`).join(', ');
  const sendBodyDescription = `Shape ${orList(families.list.map((f) => f.send.letter))} by network type.`;

  function transactionPage(p: { items: RestTransactionFragment[]; pagination: Parameters<typeof paginationRecord>[0] }): Output {
    return { data: p.items.map(transactionRecord), pagination: paginationRecord(p.pagination) };
  }

  return [
    route({
      id: 'listRelayers',
      method: 'GET',
      path: '/api/v1/relayers',
      tag: 'Relayers',
      summary: 'List relayers',
      document: RestListRelayersDocument,
      field: { type: 'Query', name: 'relayers' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'Relayer', list: true },
      errors: [],
      result: (d) => ({ data: d.relayers.items.map(relayerRecord), pagination: paginationRecord(d.relayers.pagination) }),
    }),
    route({
      id: 'getRelayer',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}',
      tag: 'Relayers',
      summary: 'Get a relayer',
      document: RestGetRelayerDocument,
      field: { type: 'Query', name: 'relayer' },
      pathParams: { relayer_id: { gql: 'id', description: relayerId.relayer_id.description } },
      status: 200,
      response: { schema: 'Relayer', list: false },
      errors: [404],
      result: (d) => ({ data: relayerRecord(d.relayer) }),
    }),
    route({
      id: 'updateRelayer',
      method: 'PATCH',
      path: '/api/v1/relayers/{relayer_id}',
      tag: 'Relayers',
      summary: 'Update a relayer',
      description:
        "Every field is optional. `policies` updates the policy fields it names (null clears them all); `notification_id: null` detaches the notification; `custom_rpc_urls: null` returns to the network's RPC URLs. A request with any invalid field changes nothing.",
      spec: '4.3',
      document: RestUpdateRelayerDocument,
      field: { type: 'Mutation', name: 'updateRelayer' },
      pathParams: { relayer_id: { gql: 'id', description: relayerId.relayer_id.description } },
      body: {
        variable: 'input',
        description: 'The fields to change.',
        // RPC URLs only as objects, as GraphQL's RpcConfigInput carries them.
        schema: z.strictObject({ ...snakeShape(relayerUpdate.shape), custom_rpc_urls: rpcConfigs.nullish(), policies: policiesField.nullish() }),
        example: { paused: true, policies: { gas_price_cap: 100000000000, whitelist_receivers: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'] } },
      },
      status: 200,
      response: { schema: 'Relayer', list: false },
      errors: [404],
      result: (d) => ({ data: relayerRecord(d.updateRelayer) }),
    }),
    route({
      id: 'sendTransaction',
      method: 'POST',
      path: '/api/v1/relayers/{relayer_id}/transactions',
      tag: 'Transactions',
      summary: 'Send a transaction through a relayer',
      description: `The body shape follows the relayer's network type: ${shapesByType}. Fields of another shape are refused. With an \`Idempotency-Key\` header, a retry with the same key and body returns the first transaction; the same key with another body is a 409.`,
      spec: '4.1',
      document: RestSendTransactionDocument,
      field: { type: 'Mutation', name: 'sendTransaction' },
      pathParams: relayerId,
      headers: idempotencyKey,
      body: { variable: 'input', description: sendBodyDescription, schema: sendFields, example: evmExample, shapes: families.list },
      status: 200,
      response: { schema: 'Transaction', list: false },
      errors: [404, 409],
      result: (d) => ({ data: transactionRecord(d.sendTransaction) }),
    }),
    route({
      id: 'listTransactions',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}/transactions',
      tag: 'Transactions',
      summary: "List a relayer's transactions",
      description: 'Newest first.',
      spec: '4.2',
      document: RestListTransactionsDocument,
      field: { type: 'Query', name: 'relayerTransactions' },
      pathParams: relayerId,
      query: paging.extend({
        status: z.enum(TransactionStatus).meta({ id: 'TransactionStatus' }).optional().meta({ description: 'Only transactions with this status.' }),
      }),
      status: 200,
      response: { schema: 'Transaction', list: true },
      errors: [404],
      result: (d) => transactionPage(d.relayerTransactions),
    }),
    route({
      id: 'getTransaction',
      method: 'GET',
      path: '/api/v1/relayers/{relayer_id}/transactions/{transaction_id}',
      tag: 'Transactions',
      summary: 'Get a transaction',
      document: RestGetTransactionDocument,
      field: { type: 'Query', name: 'transaction' },
      pathParams: { ...relayerId, transaction_id: { gql: 'id', description: "The transaction's id." } },
      status: 200,
      response: { schema: 'Transaction', list: false },
      errors: [404],
      result: (d) => ({ data: transactionRecord(d.transaction) }),
    }),
    route({
      id: 'cancelTransaction',
      method: 'DELETE',
      path: '/api/v1/relayers/{relayer_id}/transactions/{transaction_id}',
      tag: 'Transactions',
      summary: 'Cancel a transaction',
      description: 'Cancels a transaction that is not final yet; it ends `canceled`.',
      document: parse(
        'mutation RestCancelTransaction($relayerId: ID!, $id: ID!) { cancelTransaction(relayerId: $relayerId, id: $id) { ...RestTransaction } }' +
          fragmentSource(RestGetTransactionDocument),
      ),
      field: { type: 'Mutation', name: 'cancelTransaction' },
      pathParams: { ...relayerId, transaction_id: { gql: 'id', description: "The transaction's id." } },
      status: 200,
      response: { schema: 'Transaction', list: false },
      errors: [404, 409],
      result: (d: { cancelTransaction: RestTransactionFragment }) => ({ data: transactionRecord(d.cancelTransaction) }),
    }),
    route({
      id: 'replaceTransaction',
      method: 'PUT',
      path: '/api/v1/relayers/{relayer_id}/transactions/{transaction_id}',
      tag: 'Transactions',
      summary: 'Replace a transaction',
      description: 'Replaces a transaction that is not final yet by a new request at the same nonce.',
      document: parse(
        'mutation RestReplaceTransaction($relayerId: ID!, $id: ID!, $input: SendTransactionInput!) { replaceTransaction(relayerId: $relayerId, id: $id, input: $input) { ...RestTransaction } }' +
          fragmentSource(RestGetTransactionDocument),
      ),
      field: { type: 'Mutation', name: 'replaceTransaction' },
      pathParams: { ...relayerId, transaction_id: { gql: 'id', description: "The transaction's id." } },
      body: { variable: 'input', description: sendBodyDescription, schema: sendFields, example: evmExample, shapes: families.list },
      status: 200,
      response: { schema: 'Transaction', list: false },
      errors: [404, 409],
      result: (d: { replaceTransaction: RestTransactionFragment }) => ({ data: transactionRecord(d.replaceTransaction) }),
    }),
    route({
      id: 'listNotifications',
      method: 'GET',
      path: '/api/v1/notifications',
      tag: 'Notifications',
      summary: 'List notifications',
      spec: '4.6',
      document: RestListNotificationsDocument,
      field: { type: 'Query', name: 'notifications' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'Notification', list: true },
      errors: [],
      result: (d) => ({ data: d.notifications.items.map(notificationRecord), pagination: paginationRecord(d.notifications.pagination) }),
    }),
    route({
      id: 'createNotification',
      method: 'POST',
      path: '/api/v1/notifications',
      tag: 'Notifications',
      summary: 'Create a notification',
      spec: '4.4',
      document: RestCreateNotificationDocument,
      field: { type: 'Mutation', name: 'createNotification' },
      pathParams: {},
      body: {
        variable: 'input',
        description: 'A webhook target.',
        schema: z.strictObject(snakeShape(notificationCreate.shape)),
        example: { id: 'my-webhook', url: 'https://example.com/hooks/relayer', signing_key: 'a-long-random-secret-of-32-chars-or-more' },
      },
      status: 201,
      response: { schema: 'Notification', list: false },
      errors: [409],
      result: (d) => ({ data: notificationRecord(d.createNotification) }),
    }),
    route({
      id: 'getNotification',
      method: 'GET',
      path: '/api/v1/notifications/{notification_id}',
      tag: 'Notifications',
      summary: 'Get a notification',
      document: RestGetNotificationDocument,
      field: { type: 'Query', name: 'notification' },
      pathParams: { notification_id: { gql: 'id', description: "The notification's id." } },
      status: 200,
      response: { schema: 'Notification', list: false },
      errors: [404],
      result: (d) => ({ data: notificationRecord(d.notification) }),
    }),
    route({
      id: 'updateNotification',
      method: 'PATCH',
      path: '/api/v1/notifications/{notification_id}',
      tag: 'Notifications',
      summary: 'Update a notification',
      description: '`signing_key`: absent or null keeps the key, `""` removes it, any other value replaces it.',
      spec: '4.5',
      document: RestUpdateNotificationDocument,
      field: { type: 'Mutation', name: 'updateNotification' },
      pathParams: { notification_id: { gql: 'id', description: "The notification's id." } },
      body: {
        variable: 'input',
        description: 'The fields to change.',
        schema: z.strictObject(snakeShape(notificationUpdate.shape)),
        example: { url: 'https://example.com/hooks/relayer-v2', signing_key: '' },
      },
      status: 200,
      response: { schema: 'Notification', list: false },
      errors: [404],
      result: (d) => ({ data: notificationRecord(d.updateNotification) }),
    }),
    route({
      id: 'deleteNotification',
      method: 'DELETE',
      path: '/api/v1/notifications/{notification_id}',
      tag: 'Notifications',
      summary: 'Delete a notification',
      description: 'Refused (400) while a relayer uses the notification.',
      document: RestDeleteNotificationDocument,
      field: { type: 'Mutation', name: 'deleteNotification' },
      pathParams: { notification_id: { gql: 'id', description: "The notification's id." } },
      status: 200,
      response: { schema: 'string', list: false },
      errors: [404],
      result: () => ({ data: 'Notification deleted successfully' }),
    }),
    ...directRoutes,
    ...entityRoutes(records, families.types, custodies),
    ...apiKeyRoutes(),
    ...pluginRoutes(),
  ];
}

/** The fragment definitions of a generated document, as source text for a hand-written operation. */
function fragmentSource(doc: DocumentNode): string {
  return print({ kind: Kind.DOCUMENT, definitions: doc.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION) });
}
