import { hash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { ApiKey } from '../../generated/prisma/client.js';
import { isUniqueViolation } from '../../db/unique-violation.js';
import { describeIssues } from '../../lib/validate.js';
import { announce } from '../changes.js';
import { forbidden, invalid, notFound } from '../domain-error.js';
import { paged, toPage } from '../page.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { ExpiringMap } from '../../lib/expiring.js';
import { covers, type Grant, grantsOf, PERMISSION, parsePermission, visibleWhere, visible } from './permissions.js';

/** Who is calling: the administrator (the API_KEY of the environment) or a stored key. */
export interface Caller {
  /** The key's id ("admin" for API_KEY): what the log names, never the key. */
  id: string;
  admin: boolean;
  grants: Grant[];
  /** Origins a browser may call from with this key ("*": any). */
  origins: string[];
  /** Its rate-limit bucket (each key has its own). */
  budget: string;
  /** The stored key's digest, to see later whether it still exists. */
  digest?: string;
}

/** The API_KEY of the environment: every permission, any origin; `budget` names its bucket. */
export const adminCaller = (budget: string): Caller => ({
  id: 'admin',
  admin: true,
  grants: [{ resource: '*', id: '*', action: '*' }],
  origins: ['*'],
  budget,
});

/** A request without a key, on the routes served without one (readiness, the OpenAPI document). */
export const ANONYMOUS: Caller = { id: 'anonymous', admin: false, grants: [], origins: ['*'], budget: 'anonymous' };

const PREFIX = 'rk_';
/** A stored key: the prefix and 32 random bytes (base64url). */
const KEY_SHAPE = /^rk_[A-Za-z0-9_-]{43}$/;
const digestOf = (value: string) => hash('sha256', value, 'hex');

/**
 * How long a key read from the database is trusted here (API_KEYS) before it is read again:
 * a deletion elsewhere is announced at once (PostgreSQL NOTIFY), and this bounds what a missed
 * notice can cost.
 */
export const TRUST_MS = 1_000;
/** Stored API keys by digest as last read, null for none. */
const API_KEYS = slot('api keys', () => new ExpiringMap<string, Promise<Caller | null>>(TRUST_MS));

function byDigest(rt: Runtime, digest: string): Promise<Caller | null> {
  return rt.state(API_KEYS).load(digest, async () => {
    const k = await rt.db.prisma.apiKey.findUnique({ where: { digest } });
    return k && { id: k.id, admin: false, grants: grantsOf(k.permissions as string[]), origins: k.allowedOrigins as string[], budget: `key:${k.id}`, digest };
  });
}

/** The stored key a bearer token is, if any (null: not a key, or deleted). */
export function findCaller(rt: Runtime, token: string): Promise<Caller | null> | null {
  return KEY_SHAPE.test(token) ? byDigest(rt, digestOf(token)) : null;
}

/** Whether the caller's key still exists (a long-lived subscription asks at each event). */
export async function stillValid(rt: Runtime, caller: Caller): Promise<boolean> {
  return caller.admin || (!!caller.digest && (await byDigest(rt, caller.digest)) !== null);
}

/** Lets go of the keys held here after a deletion (here or announced): each is read again when next used. */
export function forgetApiKeys(rt: Runtime) {
  rt.state(API_KEYS).clear();
}

const origin = z.string().regex(/^(?:\*|[hH][tT][tT][pP][sS]?:\/\/[^/\s?#]+)$/, 'must be * or an origin (scheme://host[:port], no path)');

export const createInput = z
  .object({
    name: z.string().regex(/\S/, 'must not be empty').trim().max(200),
    permissions: z
      .array(z.string().max(300).meta({ pattern: PERMISSION.source }))
      .min(1, 'at least one')
      .max(100)
      .superRefine((list, ctx) => {
        list.forEach((p, i) => {
          const parsed = parsePermission(p);
          if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: [i], message: `"${p}": ${parsed}` });
        });
      })
      .meta({ description: 'Permissions, each <resource>:<id or all>:<action> (docs/api-keys.md).' }),
    allowedOrigins: z.array(origin).max(100).nullish().meta({ description: 'Origins browsers may call from (default ["*"]).' }),
  })
  .strict();
export type CreateApiKeyInput = z.input<typeof createInput>;

/**
 * A new key: stored as its digest, returned once with its value. A key may give only what it holds
 * itself (a key that manages keys cannot make one that opens more than it does).
 */
export async function createApiKey(rt: Runtime, caller: Caller, input: CreateApiKeyInput): Promise<{ key: ApiKey; value: string }> {
  const parsed = createInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const i = parsed.data;
  const beyond = i.permissions.filter((p) => !covers(caller.grants, parsePermission(p) as Grant));
  if (beyond.length) throw forbidden(`permissions beyond this key's own: ${beyond.join(', ')}`);
  const value = PREFIX + randomBytes(32).toString('base64url');
  try {
    const key = await rt.db.prisma.apiKey.create({
      data: { name: i.name, digest: digestOf(value), permissions: [...new Set(i.permissions)], allowedOrigins: i.allowedOrigins ?? ['*'] },
    });
    return { key, value };
  } catch (e) {
    // 256 random bits: a taken digest means the random source is broken, not bad luck.
    if (isUniqueViolation(e)) throw new Error('a new API key collided with a stored one');
    throw e;
  }
}

export async function listApiKeys(rt: Runtime, caller: Caller, page?: number | null, perPage?: number | null) {
  const p = toPage(page, perPage);
  const where = visibleWhere(visible(caller.grants, 'api_key'));
  return paged(
    p,
    () => rt.db.prisma.apiKey.findMany({ where, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], skip: p.skip, take: p.perPage }),
    () => rt.db.prisma.apiKey.count({ where }),
  );
}

const keyNotFound = (id: string) => notFound(`API key with ID ${id} not found`);

export async function getApiKey(rt: Runtime, id: string): Promise<ApiKey> {
  const key = await rt.db.prisma.apiKey.findUnique({ where: { id } });
  if (!key) throw keyNotFound(id);
  return key;
}

/** Deletes a key; every instance refuses it once the deletion commits (announced with it). */
export async function deleteApiKey(rt: Runtime, id: string): Promise<string> {
  const { count } = await rt.db.prisma.apiKey.deleteMany({ where: { id } });
  if (!count) throw keyNotFound(id);
  forgetApiKeys(rt);
  await announce(rt, { kind: 'api_key', id });
  return id;
}
