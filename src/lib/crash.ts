/**
 * Fault injection for the crash-point tests. `RELAYER_CRASH_AT=<point>` (or `<point>#<n>` for its
 * n-th pass) makes the process kill itself with SIGKILL when it reaches that point, as a machine
 * dying would: no shutdown code runs, nothing is flushed. Unset, a crash point does nothing.
 *
 * Points are named `<family>.<action>.<stage>`: family evm | stellar | solana; action send |
 * resubmit | cancel | replace | expire | resign; stage `signed` (after signing, before the durable
 * write), `saved` (after the write, before the broadcast), `broadcast` (after the broadcast, before
 * its answer is recorded).
 */
export type Crash = (point: string) => void;

export function crashAt(spec: string | undefined): Crash {
  if (!spec) return () => {};
  const [point, nth] = spec.split('#');
  let left = Math.max(1, Number(nth ?? 1) || 1);
  return (p) => {
    if (p !== point || --left > 0) return;
    process.stderr.write(`crash point ${p}: killing the process\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
