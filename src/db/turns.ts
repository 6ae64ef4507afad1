/**
 * Turns on a database that runs one operation at a time (PGlite: one connection, each statement
 * run synchronously in WebAssembly). The API's operations go before the workers' that wait: a
 * request then waits for at most the operation in progress, not for a worker's step of several.
 * A waiting background operation is taken only from a turn of the event loop, so that a request
 * which has just arrived reaches the queue first, and never after more than `passes` foreground
 * operations went before it: the workers slow down under load, they do not stop.
 */
export interface Turns {
  /** Runs `op` alone, once its turn comes. */
  run<T>(background: boolean, op: () => Promise<T>): Promise<T>;
}

export function createTurns(passes = 4): Turns {
  let busy = false;
  let scheduled = false;
  const front: (() => void)[] = [];
  const back: { go: () => void; passed: number }[] = [];

  const grant = (go: () => void) => {
    busy = true;
    go();
  };
  const next = () => {
    if (busy) return;
    if (front.length > 0 && !(back.length > 0 && back[0].passed >= passes)) {
      for (const w of back) w.passed++;
      grant(front.shift()!);
    } else if (back.length > 0 && !scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        if (busy) return;
        if (front.length > 0 && back[0].passed < passes) next();
        else grant(back.shift()!.go);
      });
    }
  };

  return {
    async run(background, op) {
      await new Promise<void>((go) => {
        if (background) back.push({ go, passed: 0 });
        else front.push(go);
        next();
      });
      try {
        return await op();
      } finally {
        busy = false;
        next();
      }
    },
  };
}
