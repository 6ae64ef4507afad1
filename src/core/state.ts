// Process state (caches, queues, client pools) belongs to a runtime, never to a module: a module
// declares a slot (a constant key saying how to create the value) and finds its value through the
// runtime it is given, so two runtimes in one process (tests run several) share nothing, and the
// state goes away with its runtime.

export interface Slot<T> {
  readonly name: string;
  readonly create: () => T;
}

export const slot = <T>(name: string, create: () => T): Slot<T> => Object.freeze({ name, create });

/** The value of a slot in one runtime, created on first use. */
export type StateOf = <T>(slot: Slot<T>) => T;

export function createState(): StateOf {
  const values = new Map<Slot<unknown>, unknown>();
  return <T>(s: Slot<T>): T => {
    if (!values.has(s)) values.set(s, s.create());
    return values.get(s) as T;
  };
}
