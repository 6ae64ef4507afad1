import { builder, pageArgs, PaginationRef } from '../../graphql/builder.js';
import { createNotification, deleteNotification, getNotification, listNotifications, updateNotification } from './service.js';

const NotificationTypeEnum = builder.enumType('NotificationType', { values: ['webhook'] as const });

export const Notification = builder.prismaObject('Notification', {
  fields: (t) => ({
    id: t.exposeID('id'),
    type: t.field({ type: NotificationTypeEnum, resolve: (n) => n.type }),
    url: t.exposeString('url'),
    hasSigningKey: t.boolean({ select: { signingKey: true }, resolve: (n) => !!n.signingKey }),
    relayers: t.relation('relayers'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const NotificationPage = builder.objectRef<{ items: object[]; pagination: { currentPage: number; perPage: number; totalItems: number } }>('NotificationPage');
NotificationPage.implement({
  fields: (t) => ({
    items: t.field({ type: [Notification], resolve: (p) => p.items as never }),
    pagination: t.field({ type: PaginationRef, resolve: (p) => p.pagination }),
  }),
});

builder.queryFields((t) => ({
  notifications: t.field({
    type: NotificationPage,
    args: { ...pageArgs },
    resolve: (_, a, ctx) => listNotifications(ctx.rt, a.page, a.perPage),
  }),
  notification: t.prismaField({
    type: 'Notification',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_q, _, a, ctx) => getNotification(ctx.rt, String(a.id)),
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
    resolve: (_q, _, a, ctx) => createNotification(ctx.rt, a.input),
  }),
  updateNotification: t.prismaField({
    type: 'Notification',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateNotificationInput, required: true }) },
    resolve: (_q, _, a, ctx) => updateNotification(ctx.rt, String(a.id), a.input),
  }),
  deleteNotification: t.prismaField({
    type: 'Notification',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_q, _, a, ctx) => deleteNotification(ctx.rt, String(a.id)),
  }),
}));
