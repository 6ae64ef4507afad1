/**
 * Runs `tick` again and again: right away when woken, else every `idleMs` (a function: read after
 * each tick). A tick that reports it did work runs again at once. Errors are handed to `onError`
 * and never stop the loop.
 */
export function startLoop(tick: () => Promise<boolean>, opts: { idleMs: number | (() => number); onError: (e: unknown) => void }) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve();
      wakeUp = resolve;
      timer = setTimeout(resolve, ms);
    });
  const done = (async () => {
    while (!stopped) {
      woken = false;
      let busy = false;
      try {
        busy = await tick();
      } catch (e) {
        opts.onError(e);
      }
      if (!busy && !stopped) await sleep(typeof opts.idleMs === 'number' ? opts.idleMs : opts.idleMs());
      clearTimeout(timer);
      wakeUp = undefined;
    }
  })();
  return {
    wake() {
      woken = true;
      wakeUp?.();
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await done;
    },
  };
}
