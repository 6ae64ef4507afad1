import pg from 'pg';

/**
 * Listens on a PostgreSQL NOTIFY channel on a connection of its own, connecting again a second after
 * it is lost; `onMessage('')` then says notices may have been missed meanwhile.
 */
export function listen(databaseUrl: string, channel: string, onMessage: (payload: string) => void, onError: (err: Error) => void) {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (again: boolean) => {
    const c = new pg.Client({ connectionString: databaseUrl });
    client = c;
    c.on('notification', (n) => n.channel === channel && onMessage(n.payload ?? ''));
    c.on('error', (err) => {
      onError(err);
      lost();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      if (again) onMessage('');
    } catch (err) {
      onError(err as Error);
      lost();
    }
  };
  const lost = () => {
    client?.removeAllListeners('notification');
    void client?.end().catch(() => {});
    client = undefined;
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect(true);
    }, 1_000);
  };
  const ready = connect(false);
  return {
    ready,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
