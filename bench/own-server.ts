// A PostgreSQL server of a bench's own: initdb in a temporary directory, autovacuum off (as on this
// machine's server), started with the settings given, optionally under a wrapper (valgrind). Needs
// initdb and postgres on the PATH or in Debian's /usr/lib/postgresql/<version>/bin; as root, the
// server runs as the user postgres, which refuses to run as root.

import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../src/chains/evm/anvil.js';

/** A PostgreSQL program: on the PATH, else in Debian's newest versioned folder. */
function pgBin(name: string): string {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((v) => path.join(debian, v, 'bin', name)).find(existsSync) ?? name;
}

export interface OwnServer {
  /** The temporary directory: the data folder, the socket and whatever the wrapper writes. */
  dir: string;
  url(database?: string): string;
  stop(): Promise<void>;
}

export async function startOwnServer(opts: { name: string; settings?: Record<string, string>; wrapper?: (dir: string) => string[] }): Promise<OwnServer> {
  const dir = mkdtempSync(path.join(tmpdir(), `relayer-${opts.name}-`));
  const asRoot = process.getuid?.() === 0;
  const as = (cmd: string, argv: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...argv]] : [cmd, argv]);
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), Number(execFileSync('id', ['-g', 'postgres']).toString()));
  execFileSync(...as(pgBin('initdb'), ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres']), { stdio: 'ignore' });

  const port = await freePort();
  const settings = { listen_addresses: '127.0.0.1', autovacuum: 'off', ...opts.settings };
  const postgres = [
    pgBin('postgres'),
    '-D',
    path.join(dir, 'data'),
    '-p',
    String(port),
    '-k',
    dir,
    ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
  ];
  const [first, ...rest] = [...(opts.wrapper?.(dir) ?? []), ...postgres];
  const server = spawn(...as(first, rest), { stdio: 'ignore', detached: true });
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    try {
      process.kill(-server.pid!, 'SIGINT');
    } catch {}
    for (let i = 0; i < 100 && server.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    rmSync(dir, { recursive: true, force: true });
  };

  // A wrapped server (valgrind) takes a while to answer.
  for (let i = 0; ; i++) {
    const client = new pg.Client(url());
    const up = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (up) return { dir, url, stop };
    if (i > 300) {
      await stop();
      throw new Error(`the PostgreSQL server of ${opts.name} did not start`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
