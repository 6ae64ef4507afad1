// A private PostgreSQL server for tests that stop and start it: initdb into a temp dir, pg_ctl on a
// free port, listening on 127.0.0.1 only. PostgreSQL refuses to run as root, so as root the server
// runs as the `postgres` system user.
import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/chains/evm/anvil.js';

const run = promisify(execFile);

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Stops the server (`immediate`: as a crash, no checkpoint; the default `fast` ends sessions cleanly). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

async function asOwner(): Promise<{ uid?: number; gid?: number }> {
  if (userInfo().uid !== 0) return {};
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid), gid: Number(gid) };
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-pg-'));
  const data = path.join(dir, 'data');
  const owner = await asOwner();
  if (owner.uid !== undefined) await chown(dir, owner.uid, owner.gid!);
  const pgRun = (bin: string, args: string[]) => run(bin, args, { ...owner, cwd: dir, timeout: 60_000 });
  await pgRun('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=50`;
  const start = async () => {
    await pgRun('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start']);
  };
  let running = false;
  await start();
  running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode = 'fast') {
      await pgRun('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '60', 'stop']).catch(() => {});
      running = false;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
