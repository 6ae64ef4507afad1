import {
  createNotification,
  deleteNotification,
  getDelivery,
  getNotification,
  listDeliveries,
  listNotifications,
  redeliver,
  updateNotification,
} from '../../core/notifications/service.js';
import type { SchemaParts } from './parts.js';
import { listWhere, needs, needsSome, readNeed } from './access.js';

/** Notifications (webhook targets) and their deliveries. */
export function notificationTypes({ builder, pageArgs, pageOf }: SchemaParts) {
  const NotificationTypeEnum = builder.enumType('NotificationType', { values: ['webhook'] as const });
  const DeliveryStatusEnum = builder.enumType('DeliveryStatus', {
    values: {
      pending: { description: 'Queued, being sent, or waiting for its next try.' },
      delivered: { description: 'The receiver answered 2xx.' },
      failed: { description: 'Given up: a 4xx other than 429, a refused target, or retries exhausted. Can be redelivered.' },
    } as const,
  });

  const Delivery = builder.prismaObject('Delivery', {
    extensions: readNeed<{ notificationId: string }>('notification', (d) => d.notificationId),
    description: 'One webhook event for one notification, and how sending it went.',
    fields: (t) => ({
      id: t.exposeID('id', { description: 'Also the event id in the body.' }),
      event: t.exposeString('event', { description: 'transaction_update or relayer_state_update.' }),
      status: t.field({ type: DeliveryStatusEnum, resolve: (d) => d.status }),
      attempts: t.exposeInt('attempts', { description: 'Tries so far (since the last redelivery).' }),
      lastError: t.exposeString('lastError', { nullable: true }),
      lastStatusCode: t.exposeInt('lastStatusCode', { nullable: true }),
      nextAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => (d.status === 'pending' ? d.dueAt : null) }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
      notificationId: t.exposeString('notificationId'),
      relayerId: t.exposeString('relayerId', { nullable: true }),
      transactionId: t.exposeString('transactionId', { nullable: true }),
      body: t.field({ type: 'JSON', description: 'The body as sent (every attempt sends the same bytes).', resolve: (d) => JSON.parse(d.body) }),
    }),
  });

  const DeliveryPage = pageOf('DeliveryPage', Delivery);

  const Notification = builder.prismaObject('Notification', {
    extensions: readNeed<{ id: string }>('notification', (n) => n.id),
    fields: (t) => ({
      id: t.exposeID('id'),
      type: t.field({ type: NotificationTypeEnum, resolve: (n) => n.type }),
      url: t.exposeString('url'),
      hasSigningKey: t.boolean({ select: { signingKey: true }, resolve: (n) => !!n.signingKey }),
      relayers: t.relation('relayers'),
      deliveries: t.field({
        type: DeliveryPage,
        description: 'Webhook deliveries to this notification, newest first.',
        args: { ...pageArgs, status: t.arg({ type: DeliveryStatusEnum, required: false }) },
        resolve: (n, a, ctx) => listDeliveries(ctx.rt, n.id, a),
      }),
      createdAt: t.expose('createdAt', { type: 'DateTime' }),
      updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    }),
  });

  const NotificationPage = pageOf('NotificationPage', Notification);

  builder.queryFields((t) => ({
    notifications: t.field({
      type: NotificationPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'notification'),
      resolve: (_, a, ctx) => listNotifications(ctx.rt, a.page, a.perPage, listWhere(ctx.caller, 'notification')),
    }),
    notification: t.prismaField({
      type: 'Notification',
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'notification', String(a.id), 'read'),
      resolve: (_q, _, a, ctx) => getNotification(ctx.rt, String(a.id)),
    }),
    delivery: t.prismaField({
      type: 'Delivery',
      args: { id: t.arg.id({ required: true }) },
      authScopes: async (_, a, ctx) => ctx.caller.admin || needs(ctx, 'notification', (await getDelivery(ctx.rt, String(a.id))).notificationId, 'read'),
      resolve: (_q, _, a, ctx) => getDelivery(ctx.rt, String(a.id)),
    }),
  }));

  const CreateNotificationInput = builder.inputType('CreateNotificationInput', {
    fields: (t) => ({
      id: t.string({ required: false }),
      type: t.field({ type: NotificationTypeEnum, required: false }),
      url: t.string({ required: true }),
      signingKey: t.string({ required: false }),
    }),
  });

  const UpdateNotificationInput = builder.inputType('UpdateNotificationInput', {
    fields: (t) => ({
      type: t.field({ type: NotificationTypeEnum, required: false }),
      url: t.string({ required: false }),
      signingKey: t.string({ required: false, description: 'Absent or null keeps the key, "" removes it, a value replaces it.' }),
    }),
  });

  builder.mutationFields((t) => ({
    createNotification: t.prismaField({
      type: 'Notification',
      args: { input: t.arg({ type: CreateNotificationInput, required: true }) },
      // A new notification without an id (a UUID is made) needs the permission on all of them.
      authScopes: (_, a, ctx) => needs(ctx, 'notification', a.input.id ?? '*', 'manage'),
      resolve: (_q, _, a, ctx) => createNotification(ctx.rt, a.input),
    }),
    updateNotification: t.prismaField({
      type: 'Notification',
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateNotificationInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'notification', String(a.id), 'manage'),
      resolve: (_q, _, a, ctx) => updateNotification(ctx.rt, String(a.id), a.input),
    }),
    deleteNotification: t.prismaField({
      type: 'Notification',
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'notification', String(a.id), 'manage'),
      resolve: (_q, _, a, ctx) => deleteNotification(ctx.rt, String(a.id)),
    }),
    redeliver: t.prismaField({
      type: 'Delivery',
      description: 'Sends a failed or delivered event again (same body and event id); refused while it is pending.',
      args: { id: t.arg.id({ required: true }) },
      authScopes: async (_, a, ctx) => ctx.caller.admin || needs(ctx, 'notification', (await getDelivery(ctx.rt, String(a.id))).notificationId, 'execute'),
      resolve: (_q, _, a, ctx) => redeliver(ctx.rt, String(a.id)),
    }),
  }));
}
