import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

export const ANVIL_DEFAULT_MNEMONIC = 'test test test test test test test test test test test junk';
export const ANVIL_DEFAULT_CHAIN_ID = 31337;

/**
 * Anvil's well-known dev account #0 of that mnemonic (a public test key, never for a real chain).
 * Written out: deriving it costs a quarter of a second of CPU at every start.
 */
export const ANVIL_DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
export const ANVIL_DEV_PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
/** Account #9 of that mnemonic: pays for placing shared contracts, leaving #0's nonces to relayers. */
export const ANVIL_DEPLOYER_PRIVATE_KEY = '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6';

export type AnvilOptions = {
  /** 0 or undefined = pick a free port. */
  port?: number;
  chainId?: number;
  /** Seconds between blocks; undefined = mine on every transaction. */
  blockTime?: number;
  /** The block gas limit (anvil's default: 30,000,000). */
  gasLimit?: number;
  mnemonic?: string;
  accounts?: number;
  /** Initial balance of each dev account, in ether. */
  balance?: number | bigint;
  /** Default true: drop anvil's output instead of forwarding it. */
  silent?: boolean;
  /** Keep the chain in this file: loaded at start, written every few seconds and on exit. */
  statePath?: string;
  startTimeoutMs?: number;
};

export type AnvilInstance = {
  url: string;
  port: number;
  chainId: number;
  process: ChildProcess;
  stop(): Promise<void>;
};

const PLATFORM_PACKAGES: Record<string, string> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

export function anvilBinaryPath(): string {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) throw new Error(`anvil: unsupported platform ${process.platform}/${process.arch}`);
  const require = createRequire(import.meta.url);
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(`anvil: package ${pkg} is not installed`);
  }
  return join(dirname(pkgJson), 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Kills the anvil child synchronously if this process exits while it runs. */
function killOnExit(child: ChildProcess): void {
  const kill = () => child.kill('SIGKILL');
  process.on('exit', kill);
  child.once('exit', () => process.off('exit', kill));
}

class AddressInUseError extends Error {}

export async function startAnvil(opts: AnvilOptions = {}): Promise<AnvilInstance> {
  const pickPort = !opts.port;
  for (let attempt = 0; ; attempt++) {
    const port = pickPort ? await freePort() : opts.port!;
    try {
      return await launch(port, opts);
    } catch (err) {
      // Another process can grab the port between freePort() and anvil binding it.
      if (err instanceof AddressInUseError && pickPort && attempt < 5) continue;
      throw err;
    }
  }
}

async function launch(port: number, opts: AnvilOptions): Promise<AnvilInstance> {
  const chainId = opts.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId)];
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime));
  if (opts.gasLimit !== undefined) args.push('--gas-limit', String(opts.gasLimit));
  if (opts.mnemonic !== undefined) args.push('--mnemonic', opts.mnemonic);
  if (opts.accounts !== undefined) args.push('--accounts', String(opts.accounts));
  if (opts.balance !== undefined) args.push('--balance', String(opts.balance));
  if (opts.statePath !== undefined) args.push('--state', opts.statePath, '--state-interval', '2');

  const silent = opts.silent ?? true;
  const child = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);

  // Wait for anvil's own "Listening on" line, not just any answer on the port:
  // with a port race, something else could be answering there.
  let listening = false;
  let stdoutTail = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    if (!listening) {
      stdoutTail = (stdoutTail + chunk.toString()).slice(-512);
      listening = stdoutTail.includes(`Listening on 127.0.0.1:${port}`);
    }
    if (!silent) process.stdout.write(chunk);
  });

  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4096);
    if (!silent) process.stderr.write(chunk);
  });

  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
    child.once('error', (err) => {
      stderr += String(err);
      exited = true;
      resolve();
    });
  });

  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exitPromise;
    clearTimeout(timer);
  };

  const deadline = Date.now() + (opts.startTimeoutMs ?? 20_000);
  while (true) {
    if (exited) {
      const msg = stderr.trim() || `exit code ${child.exitCode}`;
      if (/address already in use/i.test(msg)) throw new AddressInUseError(`anvil: port ${port} in use`);
      throw new Error(`anvil failed to start: ${msg}`);
    }
    const answered = listening ? await chainIdOf(url) : undefined;
    if (answered !== undefined) {
      if (answered !== chainId) {
        await stop();
        throw new Error(`anvil: expected chain id ${chainId}, node at port ${port} reports ${answered}`);
      }
      return { url, port, chainId, process: child, stop };
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`anvil did not answer on port ${port} in time: ${stderr.trim()}`);
    }
    await Promise.race([new Promise((r) => setTimeout(r, 50)), exitPromise]);
  }
}

async function chainIdOf(url: string): Promise<number | undefined> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    const body = (await res.json()) as { result?: string };
    return body.result ? Number(body.result) : undefined;
  } catch {
    return undefined;
  }
}
