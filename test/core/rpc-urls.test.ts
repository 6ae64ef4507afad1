import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import type { RpcEndpoint } from '../../src/core/rpc-urls.js';
import { families } from '../support/families.js';
import { evmConfig, startTestService, type TestService } from '../support/service.js';

// One rule for RPC URLs (src/core/rpc-urls.ts): the config file, REST and GraphQL take and refuse the
// same endpoints, for networks and relayers alike, with the same reason.

type Entry = string | Record<string, unknown>;

/** An entry, and why it is refused (null: accepted). */
const CASES: [Entry, string | null][] = [
  ['http://127.0.0.1:8545', null],
  ['https://eth-mainnet.example.com/v2/key?x=1', null],
  ['HTTPS://RPC.EXAMPLE.COM', null],
  ['http://[::1]:8545', null],
  [{ url: 'https://rpc.example.com', weight: 0 }, null],
  [{ url: 'https://rpc.example.com', weight: 100 }, null],
  [{ url: 'https://rpc.example.com' }, null],
  [{ url: 'https://rpc.example.com', weight: null }, null],
  ['ws://127.0.0.1:8546', 'must be an http(s) URL'],
  ['wss://rpc.example.com', 'must be an http(s) URL'],
  ['ftp://rpc.example.com', 'must be an http(s) URL'],
  ['not a url', 'must be an http(s) URL'],
  ['', 'must be an http(s) URL'],
  ['http://', 'must be an http(s) URL'],
  ['http://[::1', 'must be an http(s) URL'],
  ['https://rpc.example.com/a b', 'must be an http(s) URL'],
  ['https://rpc.example.com/\t', 'must not contain control characters'],
  [{ url: 'https://rpc.example.com', weight: 101 }, 'must be an integer from 0 to 100'],
  [{ url: 'https://rpc.example.com', weight: -1 }, 'must be an integer from 0 to 100'],
  [{ url: 'ftp://rpc.example.com', weight: 1 }, 'must be an http(s) URL'],
];
/** Refused by GraphQL's input types before the rule is asked (RpcConfigInput: url String!, weight Int). */
const TYPED: [Entry, string][] = [
  [{ url: 'https://rpc.example.com', weight: 1.5 }, 'must be an integer from 0 to 100'],
  [{ url: 'https://rpc.example.com', weight: '1' }, 'must be an integer from 0 to 100'],
];

/** Not an endpoint at all: refused everywhere, each surface naming it in its own words. */
const MALFORMED: Entry[] = [{ weight: 1 }, { url: 5 }, { url: 'https://rpc.example.com', extra: 1 }, { url: null }];

const asObject = (e: Entry) => (typeof e === 'string' ? { url: e } : e);
const normal = (e: Entry): RpcEndpoint => {
  const o = asObject(e) as { url: string; weight?: number | null };
  return { url: o.url, weight: o.weight ?? 100 };
};

/** null when accepted, else every reason given. */
type Verdict = string[] | null;

let svc: TestService;
let n = 0;
beforeAll(async () => {
  svc = await startTestService({ workers: false });
});
afterAll(() => svc?.stop());

async function viaConfig(entries: Entry[]): Promise<{ network: Verdict; relayer: Verdict; loaded?: RpcEndpoint[][] }> {
  const config = evmConfig('http://127.0.0.1:1') as ReturnType<typeof evmConfig> & Record<string, any>;
  (config.networks[0] as Record<string, unknown>).rpc_urls = entries;
  (config.relayers[0] as Record<string, unknown>).custom_rpc_urls = entries;
  const file = path.join(svc.dir, `rpc-${++n}.json`);
  await writeFile(file, JSON.stringify(config));
  try {
    const c = await loadConfig(file, families);
    return { network: null, relayer: null, loaded: [c.networks.get('evm:localnet')!.rpcUrls, c.relayers[0].customRpcUrls!] };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const of = (field: string) => {
      const found = e.problems.filter((p) => p.includes(`.${field}`));
      return found.length ? found : null;
    };
    return { network: of('rpc_urls'), relayer: of('custom_rpc_urls') };
  }
}

async function rest(method: string, url: string, body: unknown): Promise<Verdict> {
  const res = await svc.request(method, url, body);
  if (res.status < 300) return null;
  const b = await res.json();
  expect([res.status, b.message]).toEqual([400, 'Bad Request']);
  return [b.error];
}

async function gql(query: string, variables: Record<string, unknown>): Promise<Verdict> {
  const { errors } = await svc.gql(query, variables);
  if (!errors) return null;
  // The service's refusals are BAD_REQUEST; GraphQL's own (a variable of the wrong type) have no code.
  for (const e of errors as { extensions?: { code?: string } }[]) expect([undefined, 'BAD_REQUEST']).toContain(e.extensions?.code);
  return errors.map((e: { message: string; extensions?: { detail?: string } }) => e.extensions?.detail ?? e.message);
}

const relayer = () => ({ id: `rpc-${++n}`, name: 'RPC test', network: 'localnet', network_type: 'evm', signer_id: 'dev-signer' });

/** The verdict of each path for a list of entries (as objects where the path takes only objects). */
async function verdicts(entries: Entry[]): Promise<Record<string, Verdict>> {
  const objects = entries.map(asObject);
  const cfg = await viaConfig(entries);
  const r = relayer();
  return {
    'config: network rpc_urls': cfg.network,
    'config: relayer custom_rpc_urls': cfg.relayer,
    'REST: PATCH relayer': await rest('PATCH', '/api/v1/relayers/evm-relayer', { custom_rpc_urls: objects }),
    'REST: POST relayer': await rest('POST', '/api/v1/relayers', { ...relayer(), custom_rpc_urls: objects }),
    'REST: PATCH network': await rest('PATCH', '/api/v1/networks/evm:localnet', { rpc_urls: entries }),
    'GraphQL: updateRelayer': await gql('mutation($u: [RpcConfigInput!]) { updateRelayer(id: "evm-relayer", input: { customRpcUrls: $u }) { id } }', {
      u: objects,
    }),
    'GraphQL: createRelayer': await gql(
      'mutation($id: String, $u: [RpcConfigInput!]) { createRelayer(input: { id: $id, name: "RPC test", network: "localnet", networkType: evm, signerId: "dev-signer", customRpcUrls: $u }) { id } }',
      { id: r.id, u: objects },
    ),
    'GraphQL: updateNetwork': await gql('mutation($u: [JSON!]) { updateNetwork(id: "evm:localnet", input: { rpcUrls: $u }) { id } }', { u: entries }),
  };
}

describe('RPC URLs: one rule for the config file, REST and GraphQL', () => {
  it('accepts and refuses the same URLs, for the same reason, on every path', async () => {
    for (const [entry, why] of CASES) {
      const got = await verdicts([entry]);
      for (const [where, verdict] of Object.entries(got)) {
        if (why === null) expect(verdict, `${JSON.stringify(entry)} through ${where}`).toBeNull();
        else {
          expect(verdict, `${JSON.stringify(entry)} through ${where}`).not.toBeNull();
          expect(verdict!.join(' | '), `${JSON.stringify(entry)} through ${where}`).toContain(`: ${why}`);
        }
      }
    }
  });

  it('keeps an accepted endpoint the same way whichever path took it (no weight, or null: 100)', async () => {
    for (const [entry] of CASES.filter(([, why]) => why === null)) {
      const { loaded } = await viaConfig([entry]);
      expect(loaded).toEqual([[normal(entry)], [normal(entry)]]);
      await verdicts([entry]);
      const row = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });
      expect(row.customRpcUrls).toEqual([normal(entry)]);
      expect(svc.rt.config.networks.get('evm:localnet')!.rpcUrls).toEqual([normal(entry)]);
    }
  });

  it('refuses a weight that is not an integer everywhere; GraphQL says so through its input type', async () => {
    for (const [entry, why] of TYPED) {
      for (const [where, verdict] of Object.entries(await verdicts([entry]))) {
        expect(verdict, `${JSON.stringify(entry)} through ${where}`).not.toBeNull();
        if (!where.startsWith('GraphQL: ') || where === 'GraphQL: updateNetwork') expect(verdict!.join(' | '), where).toContain(`: ${why}`);
        else expect(verdict!.join(' | '), where).toMatch(/Int cannot represent/);
      }
    }
  });

  it('refuses what is not an endpoint on every path', async () => {
    for (const entry of MALFORMED) {
      for (const [where, verdict] of Object.entries(await verdicts([entry]))) expect(verdict, `${JSON.stringify(entry)} through ${where}`).not.toBeNull();
    }
  });

  it('takes at most 20 endpoints in a list, on every path; a network needs at least one', async () => {
    const urls = (k: number) => Array.from({ length: k }, (_, i) => `https://rpc${i}.example.com`);
    for (const verdict of Object.values(await verdicts(urls(20)))) expect(verdict).toBeNull();
    for (const [where, verdict] of Object.entries(await verdicts(urls(21)))) expect(verdict?.join(' | '), where).toContain(': must list at most 20 URLs');
    const none = await verdicts([]);
    for (const where of ['config: network rpc_urls', 'REST: PATCH network', 'GraphQL: updateNetwork'])
      expect(none[where]?.join(' | '), where).toContain('rpc_urls: must list at least one URL');
    for (const where of ['config: relayer custom_rpc_urls', 'REST: PATCH relayer', 'REST: POST relayer', 'GraphQL: updateRelayer', 'GraphQL: createRelayer'])
      expect(none[where], where).toBeNull();
  });
});
