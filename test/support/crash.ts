import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startInstance, type Instance } from './instance.js';
import { createTestDatabase } from './postgres.js';

/**
 * Starts the service as its own process with crash point `point` armed (src/lib/crash.ts) and
 * returns it with `crashed`, which resolves once the process has killed itself there (rejecting
 * after `ms` with its output when it never reaches the point).
 */
export async function startArmed(env: Record<string, string>, point: string, ms = 60_000): Promise<Instance & { crashed: Promise<void> }> {
  const instance = await startInstance({ ...env, RELAYER_CRASH_AT: point });
  const crashed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`crash point ${point} not reached in ${ms} ms:\n${instance.output().slice(-4000)}`)), ms);
    instance.process.once('exit', (_code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL' && instance.output().includes(`crash point ${point}`)) resolve();
      else reject(new Error(`instance exited (${signal ?? 'code'}) without reaching ${point}:\n${instance.output().slice(-4000)}`));
    });
  });
  crashed.catch(() => {});
  return Object.assign(instance, { crashed });
}

/**
 * The environment of a service under a fault test: `config` written to a temporary DATA_DIR, on
 * PGlite or on a fresh PostgreSQL database (`db`), named `instanceId`. What it creates is undone
 * by the functions it pushes onto `cleanup`.
 */
export async function faultEnv(
  db: 'pglite' | 'postgres',
  config: object,
  instanceId: string,
  cleanup: (() => Promise<unknown>)[],
): Promise<Record<string, string>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-faults-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const database = db === 'postgres' ? await createTestDatabase() : undefined;
  if (database) cleanup.push(() => database.drop());
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  return { CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir, INSTANCE_ID: instanceId, ...(database ? { DATABASE_URL: database.url } : {}) };
}
