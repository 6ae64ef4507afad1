/**
 * Starts consuming a pubsub subscription now rather than at the client's first read: yoga's
 * subscriptions attach their listener lazily, so events published between subscribe() and the
 * first pull (while the resolver still checks its arguments, say) would be lost.
 */
export function listenNow<T>(source: AsyncIterable<T>): AsyncIterableIterator<T> & { return(): Promise<IteratorResult<T>> } {
  const it = source[Symbol.asyncIterator]();
  let first: Promise<IteratorResult<T>> | undefined = it.next();
  const self = {
    next() {
      const p = first ?? it.next();
      first = undefined;
      return p;
    },
    return(value?: unknown) {
      first = undefined;
      return it.return ? it.return(value) : Promise.resolve({ done: true as const, value: value as never });
    },
    [Symbol.asyncIterator]() {
      return self;
    },
  };
  return self;
}
