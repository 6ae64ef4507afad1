// Every REST route and every GraphQL root field under an API key: a key holding exactly the
// permission the operation needs succeeds; a key lacking it is refused with 403 (REST) or FORBIDDEN
// (GraphQL) and nothing in the database changes. On PGlite and on PostgreSQL.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePermission } from '../../src/core/access/permissions.js';
import { postgresReachable } from '../support/postgres.js';
import { evmConfig, startTestService, type TestService } from '../support/service.js';
import { buildSchema } from '../../src/api/graphql/schema.js';
import { restRoutes } from '../../src/api/rest/routes.js';
import { FAMILY_SPECS } from '../../src/chains/list.js';
import { familySpecs } from '../../src/core/registry.js';
import { custodies } from '../support/families.js';
import { keepUserOp } from '../../src/chains/evm/aa/store.js';
import { ENTRY_POINT_V08 } from '../../src/chains/evm/aa/canonical.js';

const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const TABLES = [
  'relayers',
  'transactions',
  'transaction_counts',
  'notifications',
  'deliveries',
  'tombstones',
  'signers',
  'network_overrides',
  'api_keys',
  'plugin_kv',
  'plugin_locks',
  'plugin_settings',
  'user_operations',
];
const ECHO = fileURLToPath(new URL('./plugins/fixtures/echo.ts', import.meta.url));
const NETWORK = 'evm:localnet';

type Vars = Record<string, string>;
interface Case {
  field: string;
  /** What it needs, `<resource>:<id>:<action>`; null: nothing (any key). */
  need: string | null;
  /** Makes what the operation acts on (as the administrator); its values fill the calls below. */
  prepare?: (svc: TestService) => Promise<Vars>;
  rest?: (v: Vars) => [method: string, path: string, body?: unknown];
  /** The REST status of a success (default 200). */
  status?: number;
  /** A list: a key for other ids gets it without them (not 403). */
  list?: boolean;
  gql: (v: Vars) => [query: string, variables?: object];
}

const TX = '/api/v1/relayers/evm-relayer/transactions';
const txQuery = 'id status';

async function admin(svc: TestService, method: string, path: string, body?: unknown) {
  const res = await svc.request(method, path, body);
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

const send = async (svc: TestService, value = 1) => (await admin(svc, 'POST', TX, { to: RECEIVER, value })).id as string;
/** Made while the workers ran: a transaction with its nonce, and two deliveries the receiver took. */
const F = { nonce: '', deliveries: [] as string[] };
let seq = 0;
const fresh = (prefix: string) => `${prefix}-${++seq}`;

const CASES: Case[] = [
  // Relayers and their transactions.
  { field: 'relayers', list: true, need: 'relayer:evm-relayer:read', rest: () => ['GET', '/api/v1/relayers'], gql: () => ['{ relayers { items { id } } }'] },
  {
    field: 'relayer',
    need: 'relayer:evm-relayer:read',
    rest: () => ['GET', '/api/v1/relayers/evm-relayer'],
    gql: () => ['{ relayer(id: "evm-relayer") { id } }'],
  },
  {
    field: 'relayerStatus',
    need: 'relayer:evm-relayer:read',
    rest: () => ['GET', '/api/v1/relayers/evm-relayer/status'],
    gql: () => ['{ relayerStatus(id: "evm-relayer") { paused } }'],
  },
  {
    field: 'relayerBalance',
    need: 'relayer:evm-relayer:read',
    rest: () => ['GET', '/api/v1/relayers/evm-relayer/balance'],
    gql: () => ['{ relayerBalance(id: "evm-relayer") { balance } }'],
  },
  {
    field: 'relayerTransactions',
    need: 'relayer:evm-relayer:read',
    rest: () => ['GET', TX],
    // By page and by cursor.
    gql: () => [
      '{ relayerTransactions(relayerId: "evm-relayer") { items { id } } byCursor: relayerTransactions(relayerId: "evm-relayer", first: 5) { edges { node { id } } } }',
    ],
  },
  {
    field: 'transaction',
    need: 'relayer:evm-relayer:read',
    prepare: async (svc) => ({ tx: await send(svc) }),
    rest: (v) => ['GET', `${TX}/${v.tx}`],
    gql: (v) => [`query Q($id: ID!) { transaction(id: $id) { ${txQuery} } }`, { id: v.tx }],
  },
  {
    field: 'userOperation',
    need: 'relayer:evm-relayer:read',
    prepare: async (svc) => {
      const hash = `0x${(++seq).toString(16).padStart(64, '0')}`;
      const operation = { sender: RECEIVER, nonce: '0x0' };
      await keepUserOp(svc.rt.db, { relayerId: 'evm-relayer', chainId: 31337, entryPoint: ENTRY_POINT_V08, hash, sender: RECEIVER, nonce: 0n, operation });
      return { hash };
    },
    gql: (v) => ['query Q($h: String!) { userOperation(hash: $h) { hash status } }', { h: v.hash }],
  },
  {
    field: 'transactionByNonce',
    need: 'relayer:evm-relayer:read',
    prepare: async () => ({ nonce: F.nonce }),
    rest: (v) => ['GET', `${TX}/by-nonce/${v.nonce}`],
    gql: (v) => [`{ transactionByNonce(relayerId: "evm-relayer", nonce: ${v.nonce}) { id } }`],
  },
  {
    field: 'sendTransaction',
    need: 'relayer:evm-relayer:execute',
    rest: () => ['POST', TX, { to: RECEIVER, value: 7 }],
    gql: () => [`mutation { sendTransaction(relayerId: "evm-relayer", input: { to: "${RECEIVER}", value: "7" }) { id } }`],
  },
  {
    field: 'cancelTransaction',
    need: 'relayer:evm-relayer:execute',
    prepare: async (svc) => ({ tx: await send(svc) }),
    rest: (v) => ['DELETE', `${TX}/${v.tx}`],
    gql: (v) => [`mutation { cancelTransaction(relayerId: "evm-relayer", id: "${v.tx}") { id } }`],
  },
  {
    field: 'replaceTransaction',
    need: 'relayer:evm-relayer:execute',
    prepare: async (svc) => ({ tx: await send(svc) }),
    rest: (v) => ['PUT', `${TX}/${v.tx}`, { to: RECEIVER, value: 9 }],
    gql: (v) => [`mutation { replaceTransaction(relayerId: "evm-relayer", id: "${v.tx}", input: { to: "${RECEIVER}", value: "9" }) { id } }`],
  },
  {
    field: 'cancelPendingTransactions',
    need: 'relayer:evm-relayer:execute',
    prepare: async (svc) => ({ tx: await send(svc) }),
    rest: () => ['DELETE', `${TX}/pending`],
    gql: () => ['mutation { cancelPendingTransactions(relayerId: "evm-relayer") { totalProcessed } }'],
  },
  {
    field: 'signMessage',
    need: 'relayer:evm-relayer:execute',
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/sign', { message: 'hello' }],
    gql: () => ['mutation { signMessage(relayerId: "evm-relayer", input: { message: "hello" }) { __typename } }'],
  },
  {
    field: 'signTypedData',
    need: 'relayer:evm-relayer:execute',
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/sign-typed-data', { domain_separator: '00'.repeat(32), hash_struct_message: '11'.repeat(32) }],
    gql: () => [
      `mutation { signTypedData(relayerId: "evm-relayer", input: { domainSeparator: "${'00'.repeat(32)}", hashStructMessage: "${'11'.repeat(32)}" }) { __typename } }`,
    ],
  },
  {
    field: 'relayerRpc',
    need: 'relayer:evm-relayer:execute',
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/rpc', { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }],
    gql: () => ['mutation { relayerRpc(relayerId: "evm-relayer", request: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }) }'],
  },
  {
    // Sending a UserOperation needs execute (read alone is refused as a whole); this relayer has no
    // user_operations policy, so the call itself answers a JSON-RPC error.
    field: 'relayerBundler',
    need: 'relayer:evm-relayer:execute',
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/bundler', { jsonrpc: '2.0', id: 1, method: 'eth_sendUserOperation', params: [] }],
    gql: () => [
      'mutation B($r: String!) { relayerBundler(relayerId: "evm-relayer", request: $r) }',
      { r: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendUserOperation', params: [] }) },
    ],
  },
  {
    // An EVM relayer takes no sponsored transactions (400): what the key may do is checked first.
    field: 'sponsoredQuote',
    need: 'relayer:evm-relayer:execute',
    status: 400,
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/transactions/sponsored/quote', { transaction: 'AA==', fee_token: 'x' }],
    gql: () => ['mutation { sponsoredQuote(relayerId: "evm-relayer", request: { transaction: "AA==", fee_token: "x" }) }'],
  },
  {
    field: 'buildSponsoredTransaction',
    need: 'relayer:evm-relayer:execute',
    status: 400,
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/transactions/sponsored/build', { transaction: 'AA==', fee_token: 'x' }],
    gql: () => ['mutation { buildSponsoredTransaction(relayerId: "evm-relayer", request: { transaction: "AA==", fee_token: "x" }) }'],
  },
  {
    field: 'updateRelayer',
    need: 'relayer:evm-relayer:manage',
    rest: () => ['PATCH', '/api/v1/relayers/evm-relayer', { name: 'renamed' }],
    gql: () => ['mutation { updateRelayer(id: "evm-relayer", input: { name: "renamed again" }) { id } }'],
  },
  {
    field: 'createRelayer',
    need: 'relayer:made-*:manage',
    prepare: async (svc) => {
      const signer = fresh('made-signer');
      await admin(svc, 'POST', '/api/v1/signers', { id: signer, type: 'local' });
      return { id: fresh('made'), signer };
    },
    status: 201,
    rest: (v) => ['POST', '/api/v1/relayers', { id: v.id, name: 'made', network: 'localnet', network_type: 'evm', signer_id: v.signer }],
    gql: (v) => [`mutation { createRelayer(input: { id: "${v.id}", name: "made", network: "localnet", networkType: evm, signerId: "${v.signer}" }) { id } }`],
  },
  {
    field: 'deleteRelayer',
    need: 'relayer:gone-*:manage',
    prepare: async (svc) => {
      const [id, signer] = [fresh('gone'), fresh('gone-signer')];
      await admin(svc, 'POST', '/api/v1/signers', { id: signer, type: 'local' });
      await admin(svc, 'POST', '/api/v1/relayers', { id, name: 'gone', network: 'localnet', network_type: 'evm', signer_id: signer });
      return { id };
    },
    rest: (v) => ['DELETE', `/api/v1/relayers/${v.id}`],
    gql: (v) => [`mutation { deleteRelayer(id: "${v.id}") }`],
  },
  // Notifications and deliveries.
  {
    field: 'signTransaction',
    need: 'relayer:evm-relayer:execute',
    // EVM relayers sign transactions as they send them: the route answers 400 (after the permission check).
    status: 400,
    rest: () => ['POST', '/api/v1/relayers/evm-relayer/sign-transaction', { unsigned_xdr: 'AAAA' }],
    gql: () => ['mutation { signTransaction(relayerId: "evm-relayer", input: { unsignedXdr: "AAAA" }) { __typename } }'],
  },
  {
    field: 'notifications',
    list: true,
    need: 'notification:hook:read',
    rest: () => ['GET', '/api/v1/notifications'],
    gql: () => ['{ notifications { items { id } } }'],
  },
  {
    field: 'notification',
    need: 'notification:hook:read',
    rest: () => ['GET', '/api/v1/notifications/hook'],
    gql: () => ['{ notification(id: "hook") { id } }'],
  },
  {
    field: 'delivery',
    need: 'notification:hook:read',
    prepare: async () => ({ delivery: F.deliveries[0] }),
    gql: (v) => [`{ delivery(id: "${v.delivery}") { id status } }`],
  },
  {
    field: 'redeliver',
    need: 'notification:hook:execute',
    prepare: async () => ({ delivery: F.deliveries[1] }),
    gql: (v) => [`mutation { redeliver(id: "${v.delivery}") { id } }`],
  },
  {
    field: 'createNotification',
    need: 'notification:new-*:manage',
    prepare: async () => ({ id: fresh('new') }),
    status: 201,
    rest: (v) => ['POST', '/api/v1/notifications', { id: v.id, url: 'https://example.com/hook' }],
    gql: (v) => [`mutation { createNotification(input: { id: "${v.id}", url: "https://example.com/hook" }) { id } }`],
  },
  {
    field: 'updateNotification',
    need: 'notification:hook:manage',
    rest: () => ['PATCH', '/api/v1/notifications/hook', { signing_key: 'a-signing-key-of-at-least-32-characters' }],
    gql: () => ['mutation { updateNotification(id: "hook", input: { signingKey: "another-signing-key-of-32-characters" }) { id } }'],
  },
  {
    field: 'deleteNotification',
    need: 'notification:old-*:manage',
    prepare: async (svc) => {
      const id = fresh('old');
      await admin(svc, 'POST', '/api/v1/notifications', { id, url: 'https://example.com/old' });
      return { id };
    },
    rest: (v) => ['DELETE', `/api/v1/notifications/${v.id}`],
    gql: (v) => [`mutation { deleteNotification(id: "${v.id}") { id } }`],
  },
  // Signers.
  { field: 'signers', list: true, need: 'signer:dev-signer:read', rest: () => ['GET', '/api/v1/signers'], gql: () => ['{ signers { items { id } } }'] },
  { field: 'signer', need: 'signer:dev-signer:read', rest: () => ['GET', '/api/v1/signers/dev-signer'], gql: () => ['{ signer(id: "dev-signer") { id } }'] },
  {
    field: 'createSigner',
    need: 'signer:key-*:manage',
    prepare: async () => ({ id: fresh('key') }),
    status: 201,
    rest: (v) => ['POST', '/api/v1/signers', { id: v.id, type: 'local' }],
    gql: (v) => [`mutation { createSigner(input: { id: "${v.id}", type: "local" }) { id } }`],
  },
  {
    field: 'updateSigner',
    need: 'signer:spare-*:manage',
    prepare: async (svc) => {
      const id = fresh('spare');
      await admin(svc, 'POST', '/api/v1/signers', { id, type: 'local' });
      return { id };
    },
    rest: (v) => ['PATCH', `/api/v1/signers/${v.id}`, { type: 'local', config: {} }],
    gql: (v) => [`mutation { updateSigner(id: "${v.id}", input: { type: "local", config: {} }) { id } }`],
  },
  {
    field: 'deleteSigner',
    need: 'signer:spare-*:manage',
    prepare: async (svc) => {
      const id = fresh('spare');
      await admin(svc, 'POST', '/api/v1/signers', { id, type: 'local' });
      return { id };
    },
    rest: (v) => ['DELETE', `/api/v1/signers/${v.id}`],
    gql: (v) => [`mutation { deleteSigner(id: "${v.id}") }`],
  },
  // Networks.
  { field: 'networks', list: true, need: `network:${NETWORK}:read`, rest: () => ['GET', '/api/v1/networks'], gql: () => ['{ networks { items { id } } }'] },
  {
    field: 'network',
    need: `network:${NETWORK}:read`,
    rest: () => ['GET', `/api/v1/networks/${NETWORK}`],
    gql: () => [`{ network(id: "${NETWORK}") { id } }`],
  },
  {
    field: 'updateNetwork',
    need: `network:${NETWORK}:manage`,
    prepare: async (svc) => ({ url: svc.anvil!.url }),
    rest: (v) => ['PATCH', `/api/v1/networks/${NETWORK}`, { rpc_urls: [v.url] }],
    gql: (v) => [`mutation { updateNetwork(id: "${NETWORK}", input: { rpcUrls: ["${v.url}"] }) { id } }`],
  },
  // API keys.
  {
    field: 'apiKeys',
    list: true,
    need: 'api_key:all:read',
    rest: () => ['GET', '/api/v1/api-keys'],
    gql: () => ['{ apiKeys { items { id } } }'],
  },
  {
    field: 'apiKeyPermissions',
    need: 'api_key:all:read',
    prepare: async (svc) => ({ id: (await admin(svc, 'POST', '/api/v1/api-keys', { name: 'listed', permissions: ['relayer:all:read'] })).id }),
    rest: (v) => ['GET', `/api/v1/api-keys/${v.id}/permissions`],
    gql: (v) => [`{ apiKeyPermissions(id: "${v.id}") }`],
  },
  {
    field: 'createApiKey',
    need: 'api_key:all:manage',
    status: 201,
    // It may give only what it holds: api_key:all:manage itself.
    rest: () => ['POST', '/api/v1/api-keys', { name: 'made', permissions: ['api_key:all:read'] }],
    gql: () => ['mutation { createApiKey(input: { name: "made", permissions: ["api_key:all:read"] }) { id value } }'],
  },
  {
    field: 'deleteApiKey',
    need: 'api_key:all:manage',
    prepare: async (svc) => ({ id: (await admin(svc, 'POST', '/api/v1/api-keys', { name: 'doomed', permissions: ['relayer:all:read'] })).id }),
    rest: (v) => ['DELETE', `/api/v1/api-keys/${v.id}`],
    gql: (v) => [`mutation { deleteApiKey(id: "${v.id}") }`],
  },
  // Plugins.
  { field: 'plugins', list: true, need: 'plugin:echo:read', rest: () => ['GET', '/api/v1/plugins'], gql: () => ['{ plugins { items { id } } }'] },
  { field: 'plugin', need: 'plugin:echo:read', rest: () => ['GET', '/api/v1/plugins/echo'], gql: () => ['{ plugin(id: "echo") { id } }'] },
  {
    field: 'updatePlugin',
    need: 'plugin:echo:manage',
    rest: () => ['PATCH', '/api/v1/plugins/echo', { emit_logs: true }],
    gql: () => ['mutation { updatePlugin(id: "echo", input: { emitLogs: false }) { id } }'],
  },
  {
    field: 'callPlugin',
    need: 'plugin:echo:execute',
    rest: () => ['POST', '/api/v1/plugins/echo/call', { params: { a: 1 } }],
    gql: () => ['mutation { callPlugin(id: "echo", params: { a: 1 }) { status } }'],
  },
  // No permission: readiness (served without a key too).
  { field: 'readiness', need: null, rest: () => ['GET', '/api/v1/ready'], gql: () => ['{ readiness }'] },
];

/** Permissions next to `c.need` that do not grant it: a lower action on the same id, the same action on another id (not for lists), another resource. */
function lacking(c: Case): string[] {
  if (!c.need) return [];
  const g = parsePermission(c.need);
  if (typeof g === 'string') throw new Error(g);
  const lower = g.action === 'manage' ? 'execute' : g.action === 'execute' ? 'read' : null;
  const id = g.id === '*' ? 'all' : g.id;
  return [
    ...(lower ? [`${g.resource}:${id}:${lower}`] : []),
    ...(c.list ? [] : [`${g.resource}:${g.id === '*' ? 'just-one' : 'someone-else'}:${g.action}`]),
    `${g.resource === 'relayer' ? 'notification' : 'relayer'}:all:manage`,
  ];
}

async function fingerprint(svc: TestService): Promise<string[]> {
  return Promise.all(
    TABLES.map(async (t) => {
      const [row] = (await svc.rt.db.query(
        `SELECT count(*)::text AS n, md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS h FROM ${t} x`,
      )) as any[];
      return `${t}:${row.n}:${row.h}`;
    }),
  );
}

async function makeKey(svc: TestService, permissions: string[], allowed_origins?: string[]): Promise<string> {
  return (await admin(svc, 'POST', '/api/v1/api-keys', { name: 'under test', permissions, ...(allowed_origins ? { allowed_origins } : {}) })).value;
}

const call = (svc: TestService, key: string, [method, path, body]: [string, string, unknown?]) =>
  svc.request(method, path, body, { authorization: `Bearer ${key}` });
const gqlCall = async (svc: TestService, key: string, [query, variables]: [string, object?]) =>
  (await svc.request('POST', '/graphql', { query, variables }, { authorization: `Bearer ${key}` })).json() as Promise<any>;

describe.each([
  { db: 'pglite' as const, run: true },
  { db: 'postgres' as const, run: await postgresReachable() },
])('API key permissions ($db)', ({ db, run }) => {
  let svc: TestService;
  let hooks: Server;

  beforeAll(async () => {
    if (!run) return;
    hooks = createServer((_req, res) => res.writeHead(200).end('ok'));
    await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
    svc = await startTestService({
      db,
      anvil: true,
      env: { RATE_LIMIT_BURST_SIZE: '10000', SIGNER_STORE_KEY: 'a-signer-store-key-of-32-characters-or-more' },
      config: ({ rpcUrl }) => ({
        ...evmConfig(rpcUrl, { relayer: { notification_id: 'hook' }, notifications: [{ id: 'hook', type: 'webhook', url: hookUrl }] }),
        plugins: [{ id: 'echo', path: ECHO }],
      }),
    });
    // What needs the workers: a mined transaction (its nonce) and deliveries the receiver took.
    const tx = await send(svc);
    for (;;) {
      const row = await admin(svc, 'GET', `${TX}/${tx}`);
      const { data } = await svc.gql('{ notification(id: "hook") { deliveries(status: delivered) { items { id } } } }');
      F.deliveries = data.notification.deliveries.items.map((d: { id: string }) => d.id);
      if (row.status === 'confirmed' && F.deliveries.length >= 2) {
        F.nonce = String(row.nonce);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    // From here on nothing works in the background, so a refused call that changed anything would show
    // in the database; sent transactions stay pending, so they can be cancelled and replaced.
    svc = await svc.restart({}, false);
  });
  afterAll(async () => {
    await svc?.stop();
    hooks?.close();
  });

  it('the table holds every GraphQL root field and every REST route', () => {
    const families = familySpecs(FAMILY_SPECS);
    const schema = buildSchema(families);
    const roots = [schema.getQueryType()!, schema.getMutationType()!].flatMap((t) => Object.keys(t.getFields()));
    expect(CASES.map((c) => c.field).sort()).toEqual(roots.sort());
    for (const r of restRoutes(families, custodies)) expect(CASES.find((c) => c.field === r.field.name)?.rest, `${r.method} ${r.path}`).toBeDefined();
    // And docs/api-keys.md says what each needs.
    const doc = readFileSync(new URL('../../docs/api-keys.md', import.meta.url), 'utf8');
    for (const field of [...roots, ...Object.keys(schema.getSubscriptionType()!.getFields())]) expect(doc, field).toContain(`\`${field}\``);
  });

  for (const c of CASES) {
    for (const surface of ['REST', 'GraphQL'] as const) {
      if (surface === 'REST' && !c.rest) continue;
      it.runIf(run)(`${surface} ${c.field}: ${c.need ?? 'no permission'} succeeds; lacking it, 403 and nothing changed`, async () => {
        const v = (await c.prepare?.(svc)) ?? {};
        const [good, ...bad] = await Promise.all([makeKey(svc, c.need ? [c.need] : ['plugin:none:read']), ...lacking(c).map((p) => makeKey(svc, [p]))]);
        for (const key of bad) {
          const before = await fingerprint(svc);
          if (surface === 'REST') {
            const res = await call(svc, key, c.rest!(v));
            const body = await res.json();
            expect(res.status, `${c.field}: ${JSON.stringify(body)}`).toBe(403);
            expect(body).toMatchObject({ success: false, message: 'Forbidden', data: null, error: expect.stringMatching(/this API key (lacks|has no)/) });
          } else {
            const body = await gqlCall(svc, key, c.gql(v));
            expect(body.errors?.[0]?.extensions?.code, JSON.stringify(body)).toBe('FORBIDDEN');
            expect(body.data?.[c.field] ?? null).toBeNull();
          }
          expect(await fingerprint(svc)).toEqual(before);
        }
        const status = c.status ?? 200;
        if (surface === 'REST') {
          const res = await call(svc, good, c.rest!(v));
          const body = (await res.json()) as any;
          expect(res.status, JSON.stringify(body)).toBe(status);
          // The JSON-RPC passthrough and readiness answer without the envelope.
          if ('success' in body) expect(body.success).toBe(status < 300);
        } else {
          const body = await gqlCall(svc, good, c.gql(v));
          if (status < 300) {
            expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
            expect(body.data[c.field]).not.toBeNull();
          } else expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
        }
        if (c.list) {
          // A key for other ids only: the list, without the ids it may not read.
          const g = parsePermission(c.need!) as { resource: string; id: string };
          const other = await makeKey(svc, [`${g.resource}:someone-else:read`]);
          const ids: string[] =
            surface === 'REST'
              ? ((await (await call(svc, other, c.rest!(v))).json()) as any).data.map((x: { id: string }) => x.id)
              : (await gqlCall(svc, other, c.gql(v))).data[c.field].items.map((x: { id: string }) => x.id);
          expect(ids.filter((id) => id !== 'someone-else')).toEqual([]);
        }
      });
    }
  }
});
