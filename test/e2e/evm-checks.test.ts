import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAnvil, type AnvilInstance } from '../../src/chains/evm/anvil.js';
import { rpcFor } from '../../src/chains/evm/context.js';
import { evmConfig, startTestService, type TestService } from '../support/service.js';
import { RECEIVER, RELAYER, rpc, send, sendOk, waitStatus } from '../support/evm.js';

const RELAYER_Q = `query R($id: ID!) { relayer(id: $id) { systemDisabled disabledReason { type details } } }`;
const DEAD = 'http://127.0.0.1:1';
const hook = { relayer: { notification_id: 'hook' }, notifications: [{ id: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook' }] };

async function relayerState(svc: TestService) {
  const r = await svc.gql(RELAYER_Q, { id: RELAYER });
  return r.data.relayer as { systemDisabled: boolean; disabledReason: { type: string; details: string } | null };
}

async function waitRelayer(svc: TestService, done: (r: Awaited<ReturnType<typeof relayerState>>) => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await relayerState(svc);
    if (done(r)) return r;
    if (Date.now() > deadline) throw new Error(`timed out; relayer: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const stateEvents = async (svc: TestService) =>
  (await svc.rt.db.prisma.delivery.findMany({ where: { event: 'relayer_state_update' }, orderBy: { seq: 'asc' } })).map((d) => JSON.parse(d.body).payload);

describe('relayer start-up checks', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });

  it('disables a relayer whose chain reports another chain id, refuses its sends, and enables it again once the chain is right', async () => {
    const anvil: AnvilInstance = await startAnvil({ chainId: 31338 });
    cleanup.push(() => anvil.stop());
    const svc = await startTestService({ config: () => evmConfig(anvil.url, hook) });
    cleanup.push(() => svc.stop());

    const disabled = await waitRelayer(svc, (r) => r.systemDisabled);
    expect(disabled.disabledReason).toEqual({
      type: 'ChainIdMismatch',
      details: 'the RPC endpoint reports chain id 31338, but network "localnet" has chain_id 31337',
    });
    const refused = await send(svc, { to: RECEIVER, value: '1' });
    expect(refused.errors![0].extensions).toMatchObject({
      code: 'BAD_REQUEST',
      detail: expect.stringMatching(/relayer evm-relayer is disabled: the RPC endpoint reports chain id 31338/),
    });

    await rpc(anvil.url, 'anvil_setChainId', [31337]);
    const enabled = await waitRelayer(svc, (r) => !r.systemDisabled);
    expect(enabled.disabledReason).toBeNull();
    const events = await stateEvents(svc);
    expect(events.map((e) => [e.system_disabled, e.disabled_reason?.type ?? null])).toEqual([
      [true, 'ChainIdMismatch'],
      [false, null],
    ]);
    await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
  });

  it('disables a relayer none of whose RPC URLs answers (RpcUnavailable) and keeps re-checking it with backoff', async () => {
    const svc = await startTestService({ config: () => evmConfig(DEAD) });
    cleanup.push(() => svc.stop());
    const disabled = await waitRelayer(svc, (r) => r.systemDisabled);
    expect(disabled.disabledReason!.type).toBe('RpcUnavailable');
    expect(disabled.disabledReason!.details).toMatch(/no RPC endpoint of network "localnet" answers/);
    const first = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    expect(first.checkAt!.getTime()).toBeGreaterThan(Date.now());
    const later = await (async () => {
      for (let i = 0; i < 100; i++) {
        const r = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
        if (r.checkAttempts >= 2) return r;
        await new Promise((res) => setTimeout(res, 200));
      }
      throw new Error('not re-checked');
    })();
    // Each failed check waits twice as long as the one before.
    expect(later.checkAt!.getTime() - Date.now()).toBeGreaterThan(2_500);
    expect(later.systemDisabled).toBe(true);
  });

  it('keeps a relayer with one dead RPC URL beside a live one enabled, and relays through the live one', async () => {
    const svc = await startTestService({
      anvil: true,
      config: ({ rpcUrl }) =>
        evmConfig(rpcUrl, {
          relayer: {
            custom_rpc_urls: [
              { url: DEAD, weight: 100 },
              { url: rpcUrl, weight: 1 },
            ],
          },
        }),
    });
    cleanup.push(() => svc.stop());
    const txs = await Promise.all(Array.from({ length: 5 }, () => sendOk(svc)));
    for (const tx of txs) await waitStatus(svc, tx.id, 'confirmed');
    expect(await relayerState(svc)).toEqual({ systemDisabled: false, disabledReason: null });
    // The dead URL was tried (it is cooling down), and the live one carried the traffic.
    const endpoints = rpcFor(svc.rt, [
      { url: DEAD, weight: 100 },
      { url: svc.anvil!.url, weight: 1 },
    ]).status();
    expect(endpoints[0]).toMatchObject({ host: '127.0.0.1:1', healthy: false });
    expect(endpoints[1]).toMatchObject({ healthy: true, consecutiveFailures: 0 });
  });

  it("uses the relayer's custom_rpc_urls instead of the network's rpc_urls", async () => {
    // The network's own URL is dead; the relayer's custom_rpc_urls take precedence.
    const anvil = await startAnvil();
    cleanup.push(() => anvil.stop());
    const svc = await startTestService({ config: () => evmConfig(DEAD, { relayer: { custom_rpc_urls: [{ url: anvil.url, weight: 100 }] } }) });
    cleanup.push(() => svc.stop());
    await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
    expect((await relayerState(svc)).systemDisabled).toBe(false);
  });
});
