/**
 * A handle on something started after its holder was built (a worker): `to` is the target while
 * one is attached, undefined before and after, so callers skip what nobody would do.
 */
export interface Line<T> {
  readonly to: T | undefined;
  /** Attaches `target`; the function returned detaches it. */
  attach(target: T): () => void;
}

export function line<T>(): Line<T> {
  let to: T | undefined;
  return {
    get to() {
      return to;
    },
    attach(target) {
      to = target;
      return () => {
        if (to === target) to = undefined;
      };
    },
  };
}
