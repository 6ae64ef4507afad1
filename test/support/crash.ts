import { startInstance, type Instance } from './instance.js';

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
