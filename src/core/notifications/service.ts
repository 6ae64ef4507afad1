import { z } from 'zod';
import type { Prisma, Delivery, DeliveryStatus, Notification } from '../../generated/prisma/client.js';
import { conflict, invalid, notFound, notificationNotFound } from '../domain-error.js';
import { describeIssues, urlText } from '../../lib/validate.js';
import type { Runtime } from '../runtime.js';
import { paged, toPage } from '../page.js';
import { checkWebhookUrl } from './url.js';
import { isUniqueViolation } from '../../db/unique-violation.js';

export async function getNotification(rt: Runtime, id: string): Promise<Notification> {
  const n = await rt.db.prisma.notification.findUnique({ where: { id } });
  if (!n) throw notificationNotFound();
  return n;
}

/** A page of notifications; `where` narrows them to those the caller may read. */
export async function listNotifications(rt: Runtime, page?: number | null, perPage?: number | null, where?: Prisma.NotificationWhereInput) {
  const p = toPage(page, perPage);
  return paged(
    p,
    () => rt.db.prisma.notification.findMany({ where, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], skip: p.skip, take: p.perPage }),
    () => rt.db.prisma.notification.count({ where }),
  );
}

const id = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'may contain only letters, digits, ".", "_", ":" and "-"');
// As far as a schema can tell (the OpenAPI document shows it); checkWebhookUrl adds what needs DNS.
const url = urlText
  .min(1, 'required')
  .url({ message: 'must be a valid URL' })
  .regex(/^https?:\/\//i, 'must be an http(s) URL')
  .meta({ format: 'uri' });
const type = z.enum(['webhook']).meta({ id: 'NotificationType' });

export const createInput = z
  .object({
    id: id.nullish().meta({ description: 'Letters, digits, ".", "_", ":" and "-" (default: a new UUID).' }),
    type: type.nullish(),
    url: url.meta({ description: 'The webhook URL (http or https).' }),
    signingKey: z.string().nullish().meta({ description: 'Signs the webhook bodies (X-Signature); never returned.' }),
  })
  .strict();
export const updateInput = z.object({ type: type.nullish(), url: url.nullish(), signingKey: z.string().nullish() }).strict();

export type CreateNotificationInput = z.input<typeof createInput>;
export type UpdateNotificationInput = z.input<typeof updateInput>;

async function validUrl(rt: Runtime, value: string): Promise<string> {
  const problem = await checkWebhookUrl(value, rt.env.webhook.blockPrivateTargets);
  if (problem) throw invalid(`url: ${problem}`);
  return value;
}

export async function createNotification(rt: Runtime, input: CreateNotificationInput): Promise<Notification> {
  const parsed = createInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const i = parsed.data;
  const data = {
    id: i.id ?? crypto.randomUUID(),
    type: 'webhook' as const,
    url: await validUrl(rt, i.url),
    signingKey: i.signingKey ? i.signingKey : null,
  };
  try {
    const [created] = await rt.db.prisma.$transaction([
      rt.db.prisma.notification.create({ data }),
      rt.db.prisma.tombstone.deleteMany({ where: { kind: 'notification', id: data.id } }),
    ]);
    return created;
  } catch (e) {
    if (isUniqueViolation(e)) {
      throw conflict('Notification with this ID already exists', `id: "${data.id}" is taken`);
    }
    throw e;
  }
}

/** signing_key: absent or null keeps the key, "" removes it, any other value replaces it. */
export async function updateNotification(rt: Runtime, id: string, input: UpdateNotificationInput): Promise<Notification> {
  await getNotification(rt, id);
  const parsed = updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const i = parsed.data;
  const data: Prisma.NotificationUpdateInput = {};
  if (i.url != null) data.url = await validUrl(rt, i.url);
  if (i.signingKey != null) data.signingKey = i.signingKey === '' ? null : i.signingKey;
  return rt.db.prisma.notification.update({ where: { id }, data });
}

/** Refused while a relayer uses the notification, so no relayer is left pointing nowhere. */
export async function deleteNotification(rt: Runtime, id: string): Promise<Notification> {
  const n = await getNotification(rt, id);
  const users = await rt.db.prisma.relayer.findMany({ where: { notificationId: id }, select: { id: true }, take: 5 });
  if (users.length) {
    throw invalid(`notification ${id} is used by relayer${users.length > 1 ? 's' : ''} ${users.map((u) => u.id).join(', ')}`);
  }
  // The tombstone keeps the config file from bringing it back at the next start.
  await rt.db.prisma.$transaction([
    rt.db.prisma.notification.delete({ where: { id } }),
    rt.db.prisma.tombstone.upsert({
      where: { kind_id: { kind: 'notification', id } },
      create: { kind: 'notification', id },
      update: { deletedAt: new Date() },
    }),
  ]);
  return n;
}

export const deliveryNotFound = (id: string) => notFound(`Delivery with ID ${id} not found`);

/** A notification's deliveries, newest first. */
export async function listDeliveries(
  rt: Runtime,
  notificationId: string,
  opts: { status?: DeliveryStatus | null; page?: number | null; perPage?: number | null },
) {
  const p = toPage(opts.page, opts.perPage);
  const where = { notificationId, ...(opts.status ? { status: opts.status } : {}) };
  return paged(
    p,
    () => rt.db.prisma.delivery.findMany({ where, orderBy: { seq: 'desc' }, skip: p.skip, take: p.perPage }),
    () => rt.db.prisma.delivery.count({ where }),
  );
}

export async function getDelivery(rt: Runtime, id: string): Promise<Delivery> {
  const d = await rt.db.prisma.delivery.findUnique({ where: { id } }).catch(() => null);
  if (!d) throw deliveryNotFound(id);
  return d;
}

/**
 * Queues a failed or delivered event again, byte for byte (same event id, so receivers can tell a
 * repeat). It keeps its place in its transaction's order: later pending events wait behind it.
 */
export async function redeliver(rt: Runtime, id: string): Promise<Delivery> {
  const { count } = await rt.db.prisma.delivery.updateMany({
    where: { id, status: { in: ['failed', 'delivered'] } },
    data: { status: 'pending', attempts: 0, dueAt: new Date(), deliveredAt: null },
  });
  if (count === 0) {
    await getDelivery(rt, id);
    throw invalid(`delivery ${id} is already queued`);
  }
  // Read before waking the sender, so the answer shows the delivery queued, not already sent.
  const queued = await getDelivery(rt, id);
  rt.notifications.sender.to?.wake();
  return queued;
}
