import { RATE_LIMITED } from './rate-limit.js';
import { forbidden, invalid } from '../../core/domain-error.js';
import { listenNow } from '../../core/notifications/live.js';
import { getRelayer } from '../../core/relayers/service.js';
import { publicState } from '../../core/transactions/record.js';
import { cancelTransaction, replaceTransaction } from '../../core/transactions/cancel.js';
import { getTransaction, listTransactions, type PageInfo, sendTransaction } from '../../core/transactions/service.js';
import { toCursor } from '../../core/page.js';
import type { Transaction as TransactionRow } from '../../generated/prisma/client.js';
import { pageAsk } from './builder.js';
import type { SchemaParts } from './parts.js';
import type { relayerTypes } from './relayers.js';
import { needs, needsSome, whileValid, readNeed } from './access.js';
import { allows } from '../../core/access/permissions.js';

type TransactionList = Awaited<ReturnType<typeof listTransactions>>;

const andList = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`);
const sentence = (s: string) => (s.endsWith('.') ? s : `${s}.`);
const COUNT = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/** Transactions: the Transaction type, the send input of every family offered, their queries, mutations and subscription. */
export function transactionTypes(
  { builder, families, pageArgs, pageOf, familyEnum, sendInputFields }: SchemaParts,
  Relayer: ReturnType<typeof relayerTypes>['Relayer'],
) {
  const TransactionStatusEnum = builder.enumType('TransactionStatus', {
    values: ['pending', 'sent', 'submitted', 'mined', 'confirmed', 'failed', 'expired', 'canceled'] as const,
  });
  const SpeedEnum = familyEnum(families.list, 'Speed');

  const Transaction = builder.prismaObject('Transaction', {
    extensions: readNeed<TransactionRow>('relayer', (tx) => tx.relayerId),
    fields: (t) => ({
      id: t.exposeID('id'),
      relayerId: t.exposeString('relayerId'),
      relayer: t.relation('relayer'),
      networkType: t.exposeString('networkType'),
      status: t.field({ type: TransactionStatusEnum, resolve: (tx) => tx.status }),
      statusReason: t.exposeString('statusReason', { nullable: true }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true }),
      confirmedAt: t.expose('confirmedAt', { type: 'DateTime', nullable: true }),
      validUntil: t.expose('validUntil', { type: 'DateTime', nullable: true }),
      hash: t.exposeString('hash', { nullable: true }),
      hashes: t.exposeStringList('hashes', { description: 'Every hash broadcast for this transaction, oldest first.' }),
      from: t.exposeString('from'),
      to: t.exposeString('to', { nullable: true }),
      value: t.expose('value', { type: 'BigInt' }),
      data: t.exposeString('data', { nullable: true }),
      nonce: t.expose('nonce', { type: 'Long', nullable: true }),
      gasLimit: t.expose('gasLimit', { type: 'Long', nullable: true }),
      gasPrice: t.expose('gasPrice', { type: 'BigInt', nullable: true }),
      maxFeePerGas: t.expose('maxFeePerGas', { type: 'BigInt', nullable: true }),
      maxPriorityFeePerGas: t.expose('maxPriorityFeePerGas', { type: 'BigInt', nullable: true }),
      speed: t.field({ type: SpeedEnum, nullable: true, resolve: (tx) => tx.speed }),
      signature: t.expose('signature', { type: 'JSON', nullable: true }),
      networkData: t.field({
        type: 'JSON',
        nullable: true,
        description: `Chain-specific details of ${andList(families.list.filter((f) => f.record.networkData).map((f) => f.label))} transactions.`,
        resolve: (tx) => publicState(tx),
      }),
    }),
  });

  const TransactionPage = pageOf('TransactionPage', Transaction);
  const PageInfo = builder.objectRef<PageInfo>('PageInfo').implement({
    fields: (t) => ({
      hasNextPage: t.exposeBoolean('hasNextPage'),
      endCursor: t.exposeString('endCursor', { nullable: true, description: "The last row's cursor: give it as `after` for the rows that follow." }),
    }),
  });
  const TransactionEdge = builder.objectRef<TransactionRow>('TransactionEdge').implement({
    fields: (t) => ({
      cursor: t.string({ resolve: (tx) => toCursor(tx) }),
      node: t.field({ type: Transaction, resolve: (tx) => tx }),
    }),
  });
  builder.objectFields(TransactionPage, (t) => ({
    edges: t.field({ type: [TransactionEdge], resolve: (p) => p.items() as Promise<TransactionRow[]> }),
    pageInfo: t.field({ type: PageInfo, resolve: (p) => (p as TransactionList).pageInfo() }),
  }));
  const listArgs = builder.args((t) => ({
    ...pageArgs,
    first: t.int({ required: false, description: 'Items after `after` (default 10, at most 100); instead of page and perPage.' }),
    after: t.string({ required: false, description: 'A cursor (pageInfo.endCursor or an edge cursor): the rows that follow it, newest first.' }),
    status: t.field({ type: TransactionStatusEnum, required: false }),
  }));

  builder.prismaObjectField(Relayer, 'transactions', (t) =>
    t.field({
      type: TransactionPage,
      directives: RATE_LIMITED,
      args: listArgs,
      resolve: (r, a, ctx, info) => listTransactions(ctx.rt, r.id, a, pageAsk(info), true),
    }),
  );

  const SendTransactionInput = builder.inputType('SendTransactionInput', {
    description: `One input for the ${COUNT[families.list.length] ?? families.list.length} request shapes: ${sentence(families.list.map((f) => f.send.summary).join(', '))} Fields of another shape are refused.`,
    fields: (t) => sendInputFields(t, families.list),
  });

  builder.queryFields((t) => ({
    relayerTransactions: t.field({
      type: TransactionPage,
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), ...listArgs },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'read'),
      resolve: (_, a, ctx, info) => listTransactions(ctx.rt, String(a.relayerId), a, pageAsk(info)),
    }),
    // A plain field: a prismaField plans a Prisma query from the selection on every request, and the
    // read is raw SQL that would not use it (a selected relation loads on its own).
    transaction: t.field({
      type: Transaction,
      args: { id: t.arg.id({ required: true }), relayerId: t.arg.id({ required: false }) },
      // Without the relayer's id, the Transaction type's own check decides once the row is read.
      authScopes: (_, a, ctx) => (a.relayerId ? needs(ctx, 'relayer', String(a.relayerId), 'read') : needsSome(ctx, 'relayer')),
      resolve: (_, a, ctx) => getTransaction(ctx.rt, String(a.id), a.relayerId ? String(a.relayerId) : null),
    }),
  }));

  // Plain fields, as the transaction query: a prismaField plans a Prisma query from the selection on
  // every request, which these resolvers never use.
  builder.mutationFields((t) => ({
    sendTransaction: t.field({
      type: Transaction,
      directives: RATE_LIMITED,
      args: {
        relayerId: t.arg.id({ required: true }),
        input: t.arg({ type: SendTransactionInput, required: true }),
        idempotencyKey: t.arg.string({ required: false, description: 'Same key and body return the first transaction; another body is a conflict.' }),
      },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => sendTransaction(ctx.rt, String(a.relayerId), a.input as Record<string, unknown>, a.idempotencyKey),
    }),
    cancelTransaction: t.field({
      type: Transaction,
      directives: RATE_LIMITED,
      description:
        'Cancels a transaction that is not mined yet. One not yet sent ends canceled at once; one already sent is replaced by a 0-value self-transfer at its nonce and ends canceled when that is mined (or mined/confirmed, if the original is mined first).',
      args: { relayerId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => cancelTransaction(ctx.rt, String(a.relayerId), String(a.id)),
    }),
    replaceTransaction: t.field({
      type: Transaction,
      directives: RATE_LIMITED,
      description:
        'Replaces the payload of a transaction that is not mined yet; the new one goes out at the same nonce with fees at least 10% above the last broadcast.',
      args: {
        relayerId: t.arg.id({ required: true }),
        id: t.arg.id({ required: true }),
        input: t.arg({ type: SendTransactionInput, required: true }),
      },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => replaceTransaction(ctx.rt, String(a.relayerId), String(a.id), a.input as Record<string, unknown>),
    }),
  }));

  builder.subscriptionFields((t) => ({
    transactionUpdated: t.field({
      type: Transaction,
      description:
        'Every status change of one transaction, or of all transactions of a relayer (new transactions included), from the moment of subscribing: the same changes, in the same order, as the transaction_update webhooks.',
      args: { transactionId: t.arg.id({ required: false }), relayerId: t.arg.id({ required: false }) },
      authScopes: (_, a, ctx) => (a.relayerId ? needs(ctx, 'relayer', String(a.relayerId), 'read') : needsSome(ctx, 'relayer')),
      subscribe: async (_, a, ctx) => {
        if (!a.transactionId && !a.relayerId) throw invalid('give transactionId or relayerId');
        // Listening starts before the checks, so no change published once this returns is missed.
        const updates = a.transactionId
          ? listenNow(ctx.rt.notifications.events.subscribe('transaction:id', String(a.transactionId)))
          : listenNow(ctx.rt.notifications.events.subscribe('transaction:relayer', String(a.relayerId)));
        try {
          if (a.transactionId) {
            const tx = await getTransaction(ctx.rt, String(a.transactionId), a.relayerId ? String(a.relayerId) : null);
            if (!allows(ctx.caller.grants, 'relayer', tx.relayerId, 'read')) throw forbidden(`this API key lacks relayer:${tx.relayerId}:read`);
          } else await getRelayer(ctx.rt, String(a.relayerId));
        } catch (e) {
          await updates.return();
          throw e;
        }
        // Every event is of the one relayer checked above; the stream ends once the key is deleted.
        return whileValid(ctx, updates);
      },
      resolve: (tx) => tx,
    }),
  }));
  return { Transaction, PageInfo };
}
