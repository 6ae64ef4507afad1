import { forbidden, invalid } from '../../core/domain-error.js';
import { allows } from '../../core/access/permissions.js';
import { listenNow } from '../../core/notifications/live.js';
import { getRelayer } from '../../core/relayers/service.js';
import { toCursor } from '../../core/page.js';
import { getUserOperation, listUserOperations, userOperationHash, type UserOperation } from '../../core/user-operations.js';
import { needs, needsSome, readNeed, whileValid } from './access.js';
import { pageAsk } from './builder.js';
import { RATE_LIMITED } from './rate-limit.js';
import type { SchemaParts } from './parts.js';
import type { relayerTypes } from './relayers.js';
import type { transactionTypes } from './transactions.js';

type OperationList = Awaited<ReturnType<typeof listUserOperations>>;

/** The receipt kept once the operation's UserOperationEvent was seen (src/chains/evm/aa/store.ts). */
type Receipt = {
  success: boolean;
  actualGasCost: string;
  actualGasUsed: string;
  transactionHash: string;
  blockNumber: string;
  blockHash: string;
  reason?: string;
};

const field = (op: UserOperation, name: string): unknown => (op.operation as Record<string, unknown> | null)?.[name];
const text = (op: UserOperation, name: string): string | null => {
  const v = field(op, name);
  return typeof v === 'string' ? v : null;
};
/** A quantity of the ERC-7769 JSON (hex) as a decimal string. */
const quantity = (op: UserOperation, name: string): string | null => {
  const v = text(op, name);
  try {
    return v === null ? null : BigInt(v).toString();
  } catch {
    return null;
  }
};

/** ERC-4337 UserOperations: their type, a query by hash, a relayer's list, and a subscription to their changes. */
export function userOperationTypes(
  { builder, pageArgs, pageOf }: SchemaParts,
  Relayer: ReturnType<typeof relayerTypes>['Relayer'],
  { PageInfo }: ReturnType<typeof transactionTypes>,
) {
  const StatusEnum = builder.enumType('UserOperationStatus', {
    description: 'pending: accepted, waiting for a bundle; submitted: in a handleOps transaction; included: its UserOperationEvent was seen; failed: dropped.',
    values: ['pending', 'submitted', 'included', 'failed'] as const,
  });

  const ReceiptRef = builder.objectRef<Receipt>('UserOperationReceipt').implement({
    description: "From the operation's UserOperationEvent.",
    fields: (t) => ({
      success: t.exposeBoolean('success', { description: "Whether the operation's call succeeded (the operation is paid for either way)." }),
      actualGasCost: t.expose('actualGasCost', { type: 'BigInt', description: 'Wei paid for it (by its paymaster, else its account).' }),
      actualGasUsed: t.expose('actualGasUsed', { type: 'BigInt' }),
      transactionHash: t.exposeString('transactionHash'),
      blockNumber: t.expose('blockNumber', { type: 'BigInt' }),
      blockHash: t.exposeString('blockHash'),
      reason: t.exposeString('reason', { nullable: true, description: 'Why the call reverted, when it did.' }),
    }),
  });

  const op = builder.prismaObject('UserOperation', {
    description: 'An ERC-4337 UserOperation a relayer accepted as a bundler; its fields as sent (ERC-7769), quantities in decimal.',
    extensions: readNeed<UserOperation>('relayer', (o) => o.relayerId),
    fields: (t) => ({
      hash: t.exposeString('hash'),
      relayerId: t.exposeString('relayerId'),
      relayer: t.relation('relayer'),
      chainId: t.exposeInt('chainId'),
      entryPoint: t.exposeString('entryPoint'),
      sender: t.exposeString('sender'),
      nonce: t.expose('nonce', { type: 'BigInt' }),
      status: t.field({ type: StatusEnum, resolve: (o) => o.status }),
      statusReason: t.exposeString('statusReason', { nullable: true }),
      factory: t.string({ nullable: true, resolve: (o) => text(o, 'factory') }),
      factoryData: t.string({ nullable: true, resolve: (o) => text(o, 'factoryData') }),
      callData: t.string({ nullable: true, resolve: (o) => text(o, 'callData') }),
      callGasLimit: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'callGasLimit') }),
      verificationGasLimit: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'verificationGasLimit') }),
      preVerificationGas: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'preVerificationGas') }),
      maxFeePerGas: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'maxFeePerGas') }),
      maxPriorityFeePerGas: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'maxPriorityFeePerGas') }),
      paymaster: t.string({ nullable: true, resolve: (o) => text(o, 'paymaster') }),
      paymasterVerificationGasLimit: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'paymasterVerificationGasLimit') }),
      paymasterPostOpGasLimit: t.field({ type: 'BigInt', nullable: true, resolve: (o) => quantity(o, 'paymasterPostOpGasLimit') }),
      paymasterData: t.string({ nullable: true, resolve: (o) => text(o, 'paymasterData') }),
      signature: t.string({ nullable: true, resolve: (o) => text(o, 'signature') }),
      eip7702Auth: t.field({
        type: 'JSON',
        nullable: true,
        description: 'The EIP-7702 authorization it carries (ERC-7769 JSON), if any.',
        resolve: (o) => (field(o, 'eip7702Auth') ?? null) as never,
      }),
      receipt: t.field({ type: ReceiptRef, nullable: true, resolve: (o) => (o.receipt as Receipt | null) ?? null }),
      transaction: t.relation('transaction', { nullable: true, description: 'The handleOps transaction of the relayer that carries it.' }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    }),
  });

  const OperationPage = pageOf('UserOperationPage', op);
  const OperationEdge = builder.objectRef<UserOperation>('UserOperationEdge').implement({
    fields: (t) => ({
      cursor: t.string({ resolve: (o) => toCursor(o) }),
      node: t.field({ type: op, resolve: (o) => o }),
    }),
  });
  builder.objectFields(OperationPage, (t) => ({
    edges: t.field({ type: [OperationEdge], resolve: (p) => p.items() as Promise<UserOperation[]> }),
    pageInfo: t.field({ type: PageInfo, resolve: (p) => (p as OperationList).pageInfo() }),
  }));

  builder.prismaObjectField(Relayer, 'userOperations', (t) =>
    t.field({
      type: OperationPage,
      description: 'The ERC-4337 operations its bundler accepted, newest first.',
      directives: RATE_LIMITED,
      args: {
        ...pageArgs,
        first: t.arg.int({ required: false, description: 'Items after `after` (default 10, at most 100); instead of page and perPage.' }),
        after: t.arg.string({ required: false, description: 'A cursor (pageInfo.endCursor or an edge cursor): the rows that follow it, newest first.' }),
        status: t.arg({ type: StatusEnum, required: false }),
      },
      resolve: (r, a, ctx, info) => listUserOperations(ctx.rt, r.id, a, pageAsk(info), true),
    }),
  );

  builder.queryFields((t) => ({
    userOperation: t.field({
      type: op,
      args: { hash: t.arg.string({ required: true }), relayerId: t.arg.id({ required: false }) },
      // Without the relayer's id, the type's own check decides once the row is read.
      authScopes: (_, a, ctx) => (a.relayerId ? needs(ctx, 'relayer', String(a.relayerId), 'read') : needsSome(ctx, 'relayer')),
      resolve: (_, a, ctx) => getUserOperation(ctx.rt, a.hash, a.relayerId ? String(a.relayerId) : null),
    }),
  }));

  builder.subscriptionFields((t) => ({
    userOperationUpdated: t.field({
      type: op,
      description:
        'Every status change of one ERC-4337 operation (by hash), or of all operations of a relayer (new ones included), from the moment of subscribing.',
      args: { hash: t.arg.string({ required: false }), relayerId: t.arg.id({ required: false }) },
      authScopes: (_, a, ctx) => (a.relayerId ? needs(ctx, 'relayer', String(a.relayerId), 'read') : needsSome(ctx, 'relayer')),
      subscribe: async (_, a, ctx) => {
        if (!a.hash && !a.relayerId) throw invalid('give hash or relayerId');
        const hash = a.hash ? userOperationHash(a.hash) : null;
        // Listening starts before the checks, so no change published once this returns is missed.
        const updates = hash
          ? listenNow(ctx.rt.notifications.events.subscribe('userOperation:hash', hash))
          : listenNow(ctx.rt.notifications.events.subscribe('userOperation:relayer', String(a.relayerId)));
        try {
          if (hash) {
            const found = await getUserOperation(ctx.rt, hash, a.relayerId ? String(a.relayerId) : null);
            if (!allows(ctx.caller.grants, 'relayer', found.relayerId, 'read')) throw forbidden(`this API key lacks relayer:${found.relayerId}:read`);
          } else await getRelayer(ctx.rt, String(a.relayerId));
        } catch (e) {
          await updates.return();
          throw e;
        }
        return whileValid(ctx, updates);
      },
      resolve: (o) => o,
    }),
  }));
}
