/** `f` run at most once: later calls return the first call's result (a promise stays the same promise). */
export function once<T>(f: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      done = true;
      value = f();
    }
    return value;
  };
}
