import { GraphQLError } from 'graphql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { relayerEntry as relayerEntryOf } from '../../src/core/relayers/entry.js';
import { conflict, invalid, notFound, unavailable } from '../../src/core/domain-error.js';
import { defineFamily, type FamilySpec } from '../../src/core/family-spec.js';
import { sendFieldsOf } from '../../src/api/graphql/fields.js';
import { jsonSchemaOf } from '../../src/api/rest/openapi.js';
import { createState, slot } from '../../src/core/state.js';
import { fromDomainError, maskError, rateLimited } from '../../src/api/graphql/app-error.js';
import { ExpiringMap } from '../../src/lib/expiring.js';
import { takeBatch } from '../../src/core/transactions/intake.js';
import type { Relayer } from '../../src/generated/prisma/client.js';
import { createLogger } from '../../src/lib/log.js';
import { httpOf } from '../../src/api/rest/status.js';
import { families, schema } from '../support/families.js';

const FAMILIES = families.list;
const NETWORK_TYPES = families.types;
const specOf = families.spec;
const relayerEntry = relayerEntryOf(NETWORK_TYPES);

afterEach(() => vi.useRealTimers());

describe('ExpiringMap', () => {
  it('forgets an entry ttl after it was set, or last read with touch', () => {
    vi.useFakeTimers({ now: 0 });
    const plain = new ExpiringMap<string, number>(1000);
    const touched = new ExpiringMap<string, number>(1000, { touch: true });
    plain.set('a', 1);
    touched.set('a', 1);
    vi.setSystemTime(900);
    expect(plain.get('a')).toBe(1);
    expect(touched.get('a')).toBe(1);
    vi.setSystemTime(1500);
    expect(plain.get('a')).toBeUndefined();
    expect(touched.get('a')).toBe(1);
  });

  it('sweeps expired entries as new keys come, so it does not grow without bound', () => {
    vi.useFakeTimers({ now: 0 });
    const m = new ExpiringMap<number, number>(100);
    for (let t = 0; t < 10_000; t += 10) {
      vi.setSystemTime(t);
      m.set(t, t);
    }
    expect(m.size).toBeLessThanOrEqual(21);
  });

  it('load keeps a promise for ttl, and not one that fails', async () => {
    vi.useFakeTimers({ now: 0 });
    const m = new ExpiringMap<string, Promise<number>>(1000);
    let loads = 0;
    const ok = () => Promise.resolve(++loads);
    const down = () => (loads++, Promise.reject(new Error('down')));
    expect(await m.load('a', ok)).toBe(1);
    vi.setSystemTime(900);
    expect(await m.load('a', ok)).toBe(1);
    vi.setSystemTime(1000);
    expect(await m.load('a', ok)).toBe(2);
    await expect(m.load('b', down)).rejects.toThrow('down');
    expect(await m.load('b', ok)).toBe(4);
  });
});

describe('runtime state slots', () => {
  it('gives each runtime its own value of a slot, created once', () => {
    const s = slot('test', () => new Map<string, number>());
    const [a, b] = [createState(), createState()];
    a(s).set('x', 1);
    expect(a(s).get('x')).toBe(1);
    expect(b(s).has('x')).toBe(false);
  });
});

describe('intake batches', () => {
  const relayer = (id: string, paused = false) =>
    ({
      id,
      updatedAt: new Date(0),
      paused,
      systemDisabled: false,
      policies: {},
      customRpcUrls: null,
      notificationId: null,
      signerId: 's',
      address: '0x1',
      network: 'n',
    }) as Relayer;
  const send = (r: Relayer, n: number) => ({ relayer: r, n });
  const ids = (groups: { relayer: Relayer; n: number }[][]) => groups.map((g) => g.map((w) => `${w.relayer.id}${w.n}`));

  it("take every relayer's waiting sends at once, a group per relayer in its arrival order", () => {
    const [a, b, c] = [relayer('a'), relayer('b'), relayer('c')];
    const queue = [send(a, 1), send(b, 1), send(c, 1), send(a, 2), send(b, 2), send({ ...c }, 2)];
    expect(ids(takeBatch(queue))).toEqual([
      ['a1', 'a2'],
      ['b1', 'b2'],
      ['c1', 'c2'],
    ]);
    expect(queue).toEqual([]);
  });

  it("leave a relayer's sends from the first checked against another version of it for the next batch, in order", () => {
    const [a, b] = [relayer('a'), relayer('b')];
    const queue = [send(a, 1), send(b, 1), send(relayer('a', true), 2), send(b, 2), send(a, 3)];
    expect(ids(takeBatch(queue))).toEqual([['a1'], ['b1', 'b2']]);
    expect(ids([queue])).toEqual([['a2', 'a3']]);
    expect(ids(takeBatch(queue))).toEqual([['a2']]);
    expect(ids(takeBatch(queue))).toEqual([['a3']]);
  });

  it('take 500 sends at most, and after the first left over none of its relayer', () => {
    const [a, b] = [relayer('a'), relayer('b')];
    const queue = [...Array.from({ length: 499 }, (_, i) => send(a, i)), send(b, 0), send(a, 499), send(b, 1)];
    const groups = takeBatch(queue);
    expect(groups.map((g) => [g[0].relayer.id, g.length])).toEqual([
      ['a', 499],
      ['b', 1],
    ]);
    expect(ids([queue])).toEqual([['a499', 'b1']]);
  });
});

describe('domain errors', () => {
  it('map to GraphQL codes in one place, and codes to HTTP statuses in one table', () => {
    expect(fromDomainError(invalid('to: bad')).extensions).toEqual({ code: 'BAD_REQUEST', detail: 'to: bad' });
    expect(fromDomainError(invalid('to: bad')).message).toBe('Bad Request');
    expect(fromDomainError(unavailable('try again')).extensions.code).toBe('BAD_REQUEST');
    expect(fromDomainError(notFound('Relayer with ID r not found')).message).toBe('Relayer with ID r not found');
    const c = fromDomainError(conflict('Notification with this ID already exists', 'id: "n" is taken'));
    expect([c.message, c.extensions]).toEqual(['Notification with this ID already exists', { code: 'CONFLICT', detail: 'id: "n" is taken' }]);
    expect(Object.fromEntries(Object.entries(httpOf).map(([k, v]) => [k, v.status]))).toEqual({
      BAD_REQUEST: 400,
      UNAUTHORIZED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      RATE_LIMITED: 429,
      INTERNAL: 500,
    });
  });

  it('masking gives rate-limit errors their /graphql HTTP status and hides unexpected errors', () => {
    const mask = maskError(createLogger('silent'), (code) => httpOf[code].status);
    const limited = mask(new GraphQLError('x', { originalError: rateLimited(2) })) as GraphQLError;
    expect(limited.extensions).toEqual({ code: 'RATE_LIMITED', http: { status: 429, headers: { 'Retry-After': '2' } } });
    const domain = mask(new GraphQLError('x', { originalError: invalid('page: bad'), path: ['a'] })) as GraphQLError;
    expect(domain.extensions).toEqual({ code: 'BAD_REQUEST', detail: 'page: bad' });
    const hidden = mask(new GraphQLError('x', { originalError: new Error('secret'), path: ['a'] })) as GraphQLError;
    expect([hidden.message, hidden.extensions.code]).toEqual(['Internal Server Error', 'INTERNAL']);
  });
});

describe('chain families, listed once', () => {
  it('give the NetworkType enum and the config check their types', () => {
    const e = schema.getType('NetworkType') as unknown as { getValues(): { name: string }[] };
    expect(
      e
        .getValues()
        .map((v) => v.name)
        .sort(),
    ).toEqual([...NETWORK_TYPES].sort());
    const entry = { id: 'r', name: 'r', network: 'n', signer_id: 's' };
    for (const type of NETWORK_TYPES) expect(relayerEntry.safeParse({ ...entry, network_type: type }).success).toBe(true);
    expect(relayerEntry.safeParse({ ...entry, network_type: 'tron' }).success).toBe(false);
  });

  it('give every send field once, shared ones described with the shapes that take them', () => {
    const fields = sendFieldsOf(FAMILIES as readonly FamilySpec[]);
    const camel = (k: string) => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    expect(Object.keys(fields)).toEqual(FAMILIES.flatMap((f) => Object.keys(f.send.fields.shape).map(camel)).filter((k, i, all) => all.indexOf(k) === i));
    for (const type of ['evm', 'stellar']) {
      expect((jsonSchemaOf(specOf(type).send.fields, {}).properties as Record<string, unknown>).valid_until).toMatchObject({
        description: 'Shapes A and C: RFC 3339 expiry (default 8 hours).',
      });
    }
  });

  it('take a fourth family from its spec alone, and refuse two definitions of one field', () => {
    const tron = defineFamily({
      type: 'tron',
      label: 'Tron',
      signerKind: 'evm',
      network: { fields: {}, probe: 'getHealth' },
      policy: { schema: z.object({}).strict(), name: 'TronPolicy' },
      send: {
        letter: 'D',
        name: 'TronTransactionRequest',
        description: 'Shape D, for Tron relayers.',
        summary: 'Tron relayers `raw_data`',
        fields: z.strictObject({
          raw_data: z.string().meta({ description: 'Shape D (Tron), required.' }),
          valid_until: z.string().optional().meta({ description: 'Shapes A, C and D: RFC 3339 expiry (default 8 hours).' }),
        }),
        schema: z.object({ rawData: z.string() }).strict(),
      },
      record: { fields: ['network_type', 'from'], networkData: true },
      load: async () => ({}),
    });
    const fields = sendFieldsOf([...(FAMILIES as readonly FamilySpec[]), tron]);
    expect(z.globalRegistry.get(fields.rawData.schema)?.description).toBe('Shape D (Tron), required.');
    expect(Object.keys(fields)).toContain('validUntil');
    const clash = { ...tron, send: { ...tron.send, fields: z.strictObject({ value: z.string() }) } };
    expect(() => sendFieldsOf([...(FAMILIES as readonly FamilySpec[]), clash])).toThrow(/value is defined by two families/);
  });
});
