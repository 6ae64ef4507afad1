/**
 * A Map whose entries expire `ttlMs` after they were set (or, with `touch`, last read). Expired
 * entries are dropped when met and in a sweep at most once per `ttlMs`, so a map that keeps taking
 * new keys holds about one period's worth of them instead of growing without bound.
 */
export class ExpiringMap<K, V> {
  readonly #entries = new Map<K, { value: V; at: number }>();
  #swept = Date.now();

  constructor(
    readonly ttlMs: number,
    private readonly opts: { touch?: boolean; onExpire?: (key: K, value: V) => void } = {},
  ) {}

  get(key: K): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    const now = Date.now();
    if (now - e.at >= this.ttlMs) {
      this.#drop(key, e.value);
      return undefined;
    }
    if (this.opts.touch) e.at = now;
    return e.value;
  }

  set(key: K, value: V): this {
    const now = Date.now();
    this.#sweep(now);
    this.#entries.set(key, { value, at: now });
    return this;
  }

  /** The live value of `key`, else a new one from `create`. */
  getOrCreate(key: K, create: () => V): V {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = create();
    this.set(key, value);
    return value;
  }

  /** The live promise of `key`, else `load`'s, which is dropped if it fails (so the next read retries). */
  load<T>(this: ExpiringMap<K, Promise<T>>, key: K, load: () => Promise<T>): Promise<T> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = load();
    this.set(key, value);
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.delete(key);
    });
    return value;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.#entries.size;
  }

  #drop(key: K, value: V) {
    this.#entries.delete(key);
    this.opts.onExpire?.(key, value);
  }

  #sweep(now: number) {
    if (now - this.#swept < this.ttlMs) return;
    this.#swept = now;
    for (const [key, e] of this.#entries) if (now - e.at >= this.ttlMs) this.#drop(key, e.value);
  }
}
