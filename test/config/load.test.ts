import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { loadSigners } from '../../src/config/signers.js';
import { DEV_ADDRESS, evmConfig, ROOT } from '../support/service.js';
import { families } from '../support/families.js';
import { MAIN } from '../support/instance.js';

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'relayer-config-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function writeConfig(name: string, config: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, typeof config === 'string' ? config : JSON.stringify(config));
  return file;
}

/** Starts the real service process; resolves with its exit code and stderr once it exits. */
async function startProcess(configFile: string, env: Record<string, string> = {}) {
  try {
    await run(process.execPath, [MAIN], {
      cwd: ROOT,
      timeout: 60_000,
      env: {
        PATH: process.env.PATH,
        CONFIG_PATH: configFile,
        DATA_DIR: path.join(dir, 'data'),
        API_KEY: 'k'.repeat(32),
        PORT: '0',
        LOG_LEVEL: 'silent',
        ...env,
      },
    });
    return { code: 0, stderr: '' };
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, stderr: err.stderr };
  }
}

const base = () => evmConfig('http://127.0.0.1:8545') as ReturnType<typeof evmConfig> & Record<string, any>;

describe('config file', () => {
  it('loads the reference format: networks, signers, notifications, relayers', async () => {
    const config = base();
    config.notifications = [{ id: 'n1', type: 'webhook', url: 'https://example.test/hook', signing_key: { type: 'env', value: 'HOOK_KEY' } }];
    (config.relayers[0] as any).notification_id = 'n1';
    (config.relayers[0] as any).policies = { gas_price_cap: 100000000000000000000, whitelist_receivers: [DEV_ADDRESS] };
    (config.relayers[0] as any).custom_rpc_urls = ['http://127.0.0.1:9999', { url: 'http://127.0.0.1:8545', weight: 30 }];
    const loaded = await loadConfig(await writeConfig('full.json', config), families, { HOOK_KEY: 'secret-key' });
    expect(loaded.networks.get('evm:localnet')).toMatchObject({
      chainId: 31337,
      requiredConfirmations: 1,
      rpcUrls: [{ url: 'http://127.0.0.1:8545', weight: 100 }],
    });
    expect(loaded.notifications).toEqual([{ id: 'n1', type: 'webhook', url: 'https://example.test/hook', signingKey: 'secret-key' }]);
    expect(loaded.relayers[0]).toMatchObject({
      id: 'evm-relayer',
      notificationId: 'n1',
      customRpcUrls: [
        { url: 'http://127.0.0.1:9999', weight: 100 },
        { url: 'http://127.0.0.1:8545', weight: 30 },
      ],
    });
    expect(loaded.relayers[0].policies.whitelist_receivers).toEqual([DEV_ADDRESS]);
    const signers = await loadSigners(loaded, families);
    expect(signers.get('dev-signer:evm')?.address).toBe(DEV_ADDRESS);
  });

  it('keeps every digit of policy integers beyond 2^53', async () => {
    const text = JSON.stringify(base()).replace('"policies":{}', '"policies":{"min_balance":123456789012345678901234567890}');
    const loaded = await loadConfig(await writeConfig('big.json', text), families);
    expect(loaded.relayers[0].policies.min_balance).toBe('123456789012345678901234567890');
  });

  it('reads networks from a directory and inherits with "from"', async () => {
    const netDir = path.join(dir, 'networks');
    await mkdir(netDir, { recursive: true });
    await writeFile(
      path.join(netDir, 'evm.json'),
      JSON.stringify({
        networks: [
          { type: 'evm', network: 'base-net', chain_id: 1, rpc_urls: ['http://127.0.0.1:1'], required_confirmations: 12, symbol: 'ETH' },
          { type: 'evm', network: 'localnet', from: 'base-net', chain_id: 31337, rpc_urls: [{ url: 'http://127.0.0.1:8545', weight: 50 }] },
        ],
      }),
    );
    const config = { ...base(), networks: './networks' };
    const loaded = await loadConfig(await writeConfig('dir.json', config), families);
    expect(loaded.networks.get('evm:localnet')).toMatchObject({
      chainId: 31337,
      requiredConfirmations: 12,
      symbol: 'ETH',
      rpcUrls: [{ url: 'http://127.0.0.1:8545', weight: 50 }],
    });
  });

  it('reports every problem at once, naming the file, the entry and the field', async () => {
    const config = base();
    config.relayers.push({ ...config.relayers[0], network: 'nowhere' } as any);
    config.relayers.push({ ...config.relayers[0], id: 'r3', signer_id: 'ghost', policies: { gas_price_cap: -1 } } as any);
    const file = await writeConfig('broken.json', config);
    const error = await loadConfig(file, families).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain(file);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        'relayers[1] ("evm-relayer").id: duplicate relayer id "evm-relayer"',
        'relayers[1] ("evm-relayer").network: unknown evm network "nowhere"',
        'relayers[2] ("r3").signer_id: unknown signer "ghost"',
        'relayers[2] ("r3").policies.gas_price_cap: must be >= 0',
      ]),
    );
  });

  it('names the entry whose secret comes from an unset environment variable', async () => {
    const config = base();
    config.signers[0].config.passphrase = { type: 'env', value: 'NOT_SET_ANYWHERE' } as any;
    const error = await loadConfig(await writeConfig('env.json', config), families, {}).catch((e) => e);
    expect(error.problems).toEqual(['signers[0] ("dev-signer").config.passphrase: environment variable NOT_SET_ANYWHERE is not set']);
  });
});

describe('start-up refuses a broken config with a clear message and a non-zero exit', () => {
  const cases: [string, (c: ReturnType<typeof base>) => unknown, RegExp][] = [
    [
      'a wrong keystore passphrase',
      (c) => ((c.signers[0].config.passphrase.value = 'wrong'), c),
      /signers\[0\] \("dev-signer"\)\.config: cannot decrypt keystore .*wrong passphrase/,
    ],
    ['a missing signer', (c) => (((c.relayers[0] as any).signer_id = 'missing'), c), /relayers\[0\] \("evm-relayer"\)\.signer_id: unknown signer "missing"/],
    [
      'an unknown network',
      (c) => (((c.relayers[0] as any).network = 'mainnet-typo'), c),
      /relayers\[0\] \("evm-relayer"\)\.network: unknown evm network "mainnet-typo"/,
    ],
    ['a duplicate id', (c) => (c.signers.push({ ...c.signers[0] }), c), /signers\[1\] \("dev-signer"\)\.id: duplicate signer id "dev-signer"/],
    ['a file that is not JSON', () => '{ "relayers": [', /not valid JSON/],
  ];
  it.each(cases)('%s', async (_name, mutate, expected) => {
    const file = await writeConfig(`start-${_name.replace(/\W+/g, '-')}.json`, mutate(base()));
    const { code, stderr } = await startProcess(file);
    expect(code).not.toBe(0);
    expect(stderr).toContain(file);
    expect(stderr).toMatch(expected);
  });

  it('an API_KEY shorter than 32 characters', async () => {
    const { code, stderr } = await startProcess(await writeConfig('ok.json', base()), { API_KEY: 'too-short' });
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/API_KEY: must be at least 32 characters/);
    expect(stderr).not.toContain('too-short');
  });
});
