// A broken plugin entry stops start-up, every problem listed at once, before anything starts.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/load.js';
import { parseEnv } from '../../../src/config/env.js';
import { createLogger } from '../../../src/lib/log.js';
import { startService } from '../../../src/service.js';
import { API_KEY } from '../../support/service.js';
import { FIXTURES } from './suite.js';

describe('plugin entries of the config file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'relayer-plugin-config-'));
    await writeFile(path.join(dir, 'broken.ts'), 'export async function handler( {\n');
    await writeFile(path.join(dir, 'nohandler.ts'), 'export const answer = 42;\n');
    await writeFile(
      path.join(dir, 'missing-import.ts'),
      "import { nothing } from 'no-such-package-anywhere';\nexport async function handler() { return nothing; }\n",
    );
    await writeFile(path.join(dir, 'throws.ts'), "throw new Error('refusing to load');\nexport async function handler() {}\n");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  async function problems(plugins: unknown[]): Promise<string[]> {
    const file = path.join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ relayers: [], signers: [], notifications: [], networks: [], plugins }));
    const env = parseEnv({ API_KEY, CONFIG_PATH: file, DATA_DIR: path.join(dir, 'data'), DEVNET: 'false', LOG_LEVEL: 'silent' });
    const e = await startService(env, { log: createLogger('silent'), workers: false }).then(
      async (svc) => {
        await svc.stop();
        throw new Error('started');
      },
      (e) => e,
    );
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }

  it('lists every bad field at once', async () => {
    expect(
      await problems([
        { id: 'ok', path: path.join(FIXTURES, 'echo.ts') },
        { id: 'ok', path: path.join(FIXTURES, 'echo.ts') },
        { path: 'x.ts' },
        { id: 'bad id!', path: 'echo.ts', timeout: 0, emit_log: true },
        { id: 'gone', path: 'nowhere.ts' },
      ]),
    ).toEqual([
      'plugins[1] ("ok").id: duplicate plugin id "ok"',
      'plugins[2].id: Invalid input: expected string, received undefined',
      'plugins[3] ("bad id!").id: must be 1 to 128 letters, digits, ".", "_" or "-"',
      'plugins[3] ("bad id!").timeout: Too small: expected number to be >0',
      'plugins[3] ("bad id!"): Unrecognized key: "emit_log"',
      `plugins[4] ("gone").path: file nowhere.ts not found (resolved to ${path.join(dir, 'nowhere.ts')})`,
    ]);
  });

  it('refuses plugins that do not compile or load, naming each', async () => {
    const found = await problems([
      { id: 'broken', path: 'broken.ts' },
      { id: 'nohandler', path: 'nohandler.ts' },
      { id: 'missing-import', path: 'missing-import.ts' },
      { id: 'throws', path: 'throws.ts' },
      { id: 'fine', path: path.join(FIXTURES, 'echo.ts') },
    ]);
    expect(found).toHaveLength(4);
    expect(found[0]).toMatch(/^plugins\[0\] \("broken"\)\.path: does not compile: .*broken\.ts:2: /);
    expect(found[1]).toBe(
      'plugins[1] ("nohandler").path: does not load: the plugin exports no handler function (export async function handler(context) { ... })',
    );
    expect(found[2]).toMatch(/^plugins\[2\] \("missing-import"\)\.path: does not load: Cannot find module 'no-such-package-anywhere'/);
    expect(found[3]).toBe('plugins[3] ("throws").path: does not load: refusing to load');
  });
});
