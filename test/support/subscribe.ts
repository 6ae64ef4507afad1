import { API_KEY } from './service.js';

/**
 * Opens a GraphQL subscription over SSE through the app (no port) and collects its `next` payloads.
 * `response` resolves once the stream is open.
 */
export function subscribe(app: { fetch(r: Request): Promise<Response> }, query: string, variables: object, token: string | null = API_KEY) {
  const events: any[] = [];
  const controller = new AbortController();
  const response = app.fetch(
    new Request('http://relayer.test/graphql', {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
      signal: controller.signal,
    }),
  );
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const decoder = new TextDecoder();
  const done = (async () => {
    const res = await response;
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return;
    reader = res.body.getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (event === 'next' && data) events.push(JSON.parse(data));
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    response,
    events,
    /** Resolves when the server ends the stream (or close() is called). */
    ended: done,
    async close() {
      controller.abort();
      await reader?.cancel().catch(() => {});
      await done;
    },
  };
}
