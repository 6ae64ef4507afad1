// A plugin that reaches for what it may not, in the real service as its own process (on PGlite, with
// the API key and the signer store key generated into its data folder): each attempt is refused in
// its own call, naming the permission, logged with the plugin's id; nothing changes on disk; the
// service and its other plugins go on.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../../support/instance.js';
import { DEV_KEYSTORE, ROOT } from '../../support/service.js';
import { FIXTURES } from './suite.js';

/** Path to a content hash for every file under `dir`, but the database's own folder (the service writes it). */
async function fingerprints(dir: string, skip: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (!entry.isFile() || file.startsWith(skip + path.sep)) continue;
    out[path.relative(dir, file)] = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  }
  return out;
}

describe('a plugin under the permission model', () => {
  let dir: string;
  let data: string;
  let pglite: string;
  let configPath: string;
  let keystore: string;
  let instance: Instance;
  let key: string;
  let port: number;
  let before: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'relayer-hostile-'));
    data = path.join(dir, 'data');
    pglite = path.join(data, 'pglite');
    configPath = path.join(dir, 'config.json');
    keystore = path.join(dir, 'keys', 'devnet.json');
    await mkdir(path.dirname(keystore), { recursive: true });
    await copyFile(DEV_KEYSTORE, keystore);
    const plugins = [
      { id: 'hostile', path: path.join(FIXTURES, 'hostile.ts') },
      { id: 'networked', path: path.join(FIXTURES, 'hostile.ts'), allow_network: true },
      { id: 'echo', path: path.join(FIXTURES, 'echo.ts') },
      { id: 'memo', path: path.join(FIXTURES, 'memo.ts') },
      { id: 'memo-fresh', path: path.join(FIXTURES, 'memo.ts'), fresh_process: true },
    ];
    const signers = [{ id: 'dev-signer', type: 'local', config: { path: keystore, passphrase: { type: 'plain', value: 'devnet' } } }];
    await writeFile(configPath, JSON.stringify({ relayers: [], signers, notifications: [], networks: [], plugins }));
    // No API_KEY and no SIGNER_STORE_KEY: the service generates both into the data folder.
    instance = await startInstance({ CONFIG_PATH: configPath, DATA_DIR: data, API_KEY: undefined as unknown as string, DATABASE_URL: '' });
    key = (await readFile(path.join(data, 'api-key'), 'utf8')).trim();
    port = Number(new URL(instance.url).port);
    await stat(path.join(data, 'signer-store-key'));
    before = await fingerprints(dir, pglite);
  }, 120_000);
  afterAll(async () => {
    await instance?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const call = (plugin: string, params: object) =>
    fetch(`${instance.url}/api/v1/plugins/${plugin}/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ params }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  /** The call is answered 403, naming the permission refused (and the path, for the file system). */
  async function refused(params: object, permission: string, resource?: string) {
    const { status, body } = await call('hostile', params);
    expect({ status, success: body.success, code: body.data?.code, permission: body.data?.details?.permission }).toEqual({
      status: 403,
      success: false,
      code: 'PERMISSION_DENIED',
      permission,
    });
    expect(body.error).toContain(`plugin hostile was refused the ${permission} permission`);
    if (resource) expect(body.data.details.resource).toBe(resource);
  }

  it('may not read the config file, a keystore, the data folder, the API key or the store key', async () => {
    await refused({ try: 'read', path: configPath }, 'FileSystemRead', configPath);
    await refused({ try: 'read', path: keystore }, 'FileSystemRead', keystore);
    await refused({ try: 'list', path: pglite }, 'FileSystemRead', pglite);
    await refused({ try: 'read', path: path.join(pglite, 'PG_VERSION') }, 'FileSystemRead');
    await refused({ try: 'read', path: path.join(data, 'api-key') }, 'FileSystemRead', path.join(data, 'api-key'));
    await refused({ try: 'read', path: path.join(data, 'signer-store-key') }, 'FileSystemRead', path.join(data, 'signer-store-key'));
  });

  it('may not write beside them, nor into its own folder', async () => {
    for (const file of [path.join(dir, 'config.json.new'), keystore, path.join(data, 'api-key'), path.join(pglite, 'planted'), path.join(FIXTURES, 'planted')])
      await refused({ try: 'write', path: file }, 'FileSystemWrite', file);
  });

  it('may not spawn a process, start a worker or load an addon', async () => {
    await refused({ try: 'spawn' }, 'ChildProcess');
    await refused({ try: 'worker' }, 'WorkerThreads');
    await refused({ try: 'addon', path: path.join(ROOT, 'node_modules/secp256k1/prebuilds/linux-x64/secp256k1.glibc.node') }, 'Addons');
  });

  it("may not connect to PostgreSQL's port nor to the service's own, with or without an error listener", async () => {
    await refused({ try: 'connect', port: 5432 }, 'Net');
    await refused({ try: 'connect', port }, 'Net');
    await refused({ try: 'fetch', port }, 'Net');
    await refused({ try: 'connect-unwatched', port: 5432 }, 'Net');
    // allow_network lets the whole network in: Node's permission model names no hosts.
    expect(await call('networked', { try: 'fetch', port })).toMatchObject({ status: 200, body: { data: 200 } });
  });

  it("sees none of the service's environment", async () => {
    expect(await call('hostile', { try: 'env' })).toMatchObject({ status: 200, body: { success: true, data: {} } });
    expect((await call('hostile', { try: 'env' })).body.data).toEqual({});
  });

  it('changed nothing on disk, logged each refusal with the plugin id, and the service goes on', async () => {
    expect(await fingerprints(dir, pglite)).toEqual(before);
    expect(await stat(path.join(pglite, 'planted')).catch(() => 'absent')).toBe('absent');
    expect(await stat(path.join(FIXTURES, 'planted')).catch(() => 'absent')).toBe('absent');
    const refusals = instance
      .output()
      .split('\n')
      .filter((l) => l.includes('plugin refused a permission'))
      .map((l) => JSON.parse(l) as { plugin: string; permission: string });
    expect(refusals.length).toBeGreaterThanOrEqual(18);
    expect(new Set(refusals.map((r) => r.plugin))).toEqual(new Set(['hostile']));
    expect(new Set(refusals.map((r) => r.permission))).toEqual(
      new Set(['FileSystemRead', 'FileSystemWrite', 'ChildProcess', 'WorkerThreads', 'Addons', 'Net']),
    );
    expect(await call('echo', { a: 1 })).toMatchObject({ status: 200, body: { data: { params: { a: 1 }, env: [] } } });
    expect(await call('hostile', { try: 'nothing' })).toMatchObject({ status: 200, body: { data: 'nothing tried' } });
  });

  it('reuses a pooled process from call to call, and gives a fresh_process plugin a new one each call', async () => {
    const pooled = [];
    for (let i = 0; i < 3; i++) pooled.push((await call('memo', {})).body.data);
    expect(new Set(pooled.map((d) => d.pid)).size).toBe(1);
    expect(pooled.map((d) => d.calls)).toEqual([1, 2, 3]);
    const fresh = [];
    for (let i = 0; i < 3; i++) fresh.push((await call('memo-fresh', {})).body.data);
    expect(new Set(fresh.map((d) => d.pid)).size).toBe(3);
    expect(fresh.map((d) => d.calls)).toEqual([1, 1, 1]);
  });

  it('leaves out of the pool a process that failed after its call answered; the next call is served', async () => {
    const { body } = await call('hostile', { try: 'leftover' });
    expect(body).toMatchObject({ success: true });
    await new Promise((r) => setTimeout(r, 500));
    const next = await call('hostile', { try: 'pid' });
    expect(next).toMatchObject({ status: 200, body: { success: true } });
    expect(next.body.data).not.toBe(body.data);
  });
});
