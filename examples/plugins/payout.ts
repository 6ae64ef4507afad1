// An example plugin, written only against @openzeppelin/relayer-sdk's types: pays `amount` wei to
// `to` through a relayer, once per `reference` (a retried call answers the first payout), and
// waits for it to be mined when asked. See docs/plugins.md.
import { type PluginContext, pluginError, type Relayer, Speed } from '@openzeppelin/relayer-sdk';

interface Params {
  reference: string;
  to: string;
  amount: number;
  wait?: boolean;
}

interface Payout {
  reference: string;
  transactionId: string;
  status: string;
  hash: string | null;
}

export async function handler({ api, kv, params, config }: PluginContext): Promise<Payout> {
  const { reference, to, amount, wait } = (params ?? {}) as Partial<Params>;
  if (typeof reference !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(reference)) {
    throw pluginError('reference: 1 to 64 letters, digits, "_" or "-"', { status: 400, code: 'INVALID_REFERENCE', details: { field: 'reference' } });
  }
  if (typeof to !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(to)) {
    throw pluginError('to: an 0x address', { status: 400, code: 'INVALID_ADDRESS', details: { field: 'to' } });
  }
  const max = Number(config?.maxAmount ?? 1e18);
  if (!Number.isInteger(amount) || (amount as number) <= 0 || (amount as number) > max) {
    throw pluginError(`amount: a whole number of wei from 1 to ${max}`, { status: 400, code: 'INVALID_AMOUNT', details: { field: 'amount', max } });
  }
  const relayer = api.useRelayer(String(config?.relayerId ?? 'evm-relayer'));

  // One payout per reference, even when two calls for it run at once on two instances.
  const sent = await kv.withLock(
    `payout-lock:${reference}`,
    async () => {
      const known = await kv.get<string>(`payout:${reference}`);
      if (known) return relayer.getTransaction({ transactionId: known });
      const tx = await relayer.sendTransaction({ to, value: amount as number, data: '0x', gas_limit: 21000, speed: Speed.FAST });
      await kv.set(`payout:${reference}`, tx.id, { ttlSec: 30 * 86400 });
      console.info(`payout ${reference}: transaction ${tx.id}`);
      return tx;
    },
    { ttlSec: 30 },
  );
  if (!sent) throw pluginError('another call is paying this reference', { status: 409, code: 'BUSY' });
  const final = wait ? await mined(relayer, sent.id) : sent;
  return { reference, transactionId: sent.id, status: String(final.status), hash: 'hash' in final ? (final.hash ?? null) : null };
}

/** The transaction once final (mined, confirmed, failed, canceled or expired), read every second for two minutes at most. */
async function mined(relayer: Relayer, transactionId: string) {
  for (let i = 0; i < 120; i++) {
    const tx = await relayer.getTransaction({ transactionId });
    if (['mined', 'confirmed', 'failed', 'canceled', 'expired'].includes(String(tx.status))) return tx;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw pluginError(`transaction ${transactionId} is not final after two minutes`, { status: 504, code: 'NOT_FINAL', details: { transactionId } });
}
