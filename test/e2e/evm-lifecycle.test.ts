import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../support/service.js';
import {
  deployReverter,
  getTx,
  RECEIVER,
  RELAYER,
  reportedStatuses,
  rpc,
  send,
  sendOk,
  switchableProxy,
  waitBroadcast,
  waitFor,
  waitStatus,
} from '../support/evm.js';

const UPDATE = `mutation U($id: ID!, $input: UpdateRelayerInput!) { updateRelayer(id: $id, input: $input) { id policies paused } }`;
const CANCEL = `mutation C($relayerId: ID!, $id: ID!) { cancelTransaction(relayerId: $relayerId, id: $id) { id status statusReason nonce hash } }`;
const REPLACE = `mutation R($relayerId: ID!, $id: ID!, $input: SendTransactionInput!) {
  replaceTransaction(relayerId: $relayerId, id: $id, input: $input) { id status statusReason nonce hash value }
}`;

describe.each(await databaseKinds())('EVM relay pipeline on %s', (db) => {
  let svc: TestService;
  let url: string;
  let proxy: Awaited<ReturnType<typeof switchableProxy>>;

  beforeAll(async () => {
    // The relayer reaches anvil through a proxy the tests can switch off.
    proxy = await switchableProxy();
    svc = await startTestService({
      db,
      anvil: true,
      config: ({ rpcUrl }) => {
        proxy.target(rpcUrl);
        return evmConfig(proxy.url, {
          relayer: { notification_id: 'hook' },
          notifications: [{ id: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook' }],
        });
      },
    });
    url = svc.anvil!.url;
  });
  afterAll(async () => {
    await svc?.stop();
    await proxy?.close();
  });

  const setPolicies = async (policies: object | null) => {
    const r = await svc.gql(UPDATE, { id: RELAYER, input: { policies } });
    expect(r.errors).toBeUndefined();
  };
  const withoutAutomine = async (fn: () => Promise<void>) => {
    await rpc(url, 'evm_setAutomine', [false]);
    try {
      await fn();
    } finally {
      await rpc(url, 'evm_setAutomine', [true]);
      await rpc(url, 'evm_mine');
    }
  };
  const badRequest = async (input: Record<string, unknown>) => {
    const r = await send(svc, input);
    expect(r.data).toBeNull();
    expect(r.errors![0].extensions.code).toBe('BAD_REQUEST');
    return r.errors![0].extensions.detail as string;
  };

  it('takes a transaction through pending, sent, submitted, mined to confirmed, filling every field', async () => {
    const tx = await sendOk(svc, { to: RECEIVER, value: '12345' });
    expect(tx.status).toBe('pending');
    const done = await waitStatus(svc, tx.id, 'confirmed');
    expect(done).toMatchObject({ from: DEV_ADDRESS, to: RECEIVER, value: '12345', speed: 'fast', statusReason: null });
    expect(done.hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(done.hashes).toEqual([done.hash]);
    expect(done.gasLimit).toBeGreaterThanOrEqual(21000);
    expect(BigInt(done.maxFeePerGas)).toBeGreaterThan(0n);
    expect(done.sentAt).not.toBeNull();
    expect(done.confirmedAt).not.toBeNull();
    const onChain = await rpc(url, 'eth_getTransactionByHash', [done.hash]);
    expect(Number(onChain.nonce)).toBe(done.nonce);
    expect(onChain.value).toBe('0x3039');
    expect(await reportedStatuses(svc, tx.id)).toEqual(['pending', 'sent', 'submitted', 'mined', 'confirmed']);
  });

  it('gives 100 concurrent sends the nonces n..n+99 with no gap or duplicate, and confirms them all', async () => {
    const sent = await Promise.all(Array.from({ length: 100 }, (_, i) => sendOk(svc, { to: RECEIVER, value: String(i + 1) })));
    const nonces = sent.map((t) => t.nonce).sort((a, b) => a - b);
    const first = nonces[0];
    expect(nonces).toEqual(Array.from({ length: 100 }, (_, i) => first + i));
    const ids = sent.map((t) => t.id);
    const deadline = Date.now() + 60_000;
    while ((await svc.rt.db.prisma.transaction.count({ where: { id: { in: ids }, status: 'confirmed' } })) < ids.length) {
      if (Date.now() > deadline) throw new Error('not all confirmed in time');
      await new Promise((r) => setTimeout(r, 200));
    }
    const done = await Promise.all(sent.map((t) => getTx(svc, t.id)));
    for (const t of done) {
      const onChain = await rpc(url, 'eth_getTransactionByHash', [t.hash]);
      expect(Number(onChain.nonce)).toBe(t.nonce);
    }
    expect(Number(await rpc(url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(first + 100);
    // Steps this large wait for their broadcasts to be mined and write once: every status is still reported, in order.
    for (const t of sent) expect(await reportedStatuses(svc, t.id)).toEqual(['pending', 'sent', 'submitted', 'mined', 'confirmed']);
  });

  it('returns the first transaction for a repeated Idempotency-Key and refuses another body with a conflict', async () => {
    const a = await send(svc, { to: RECEIVER, value: '7' }, 'key-1');
    const b = await send(svc, { to: RECEIVER, value: '7' }, 'key-1');
    expect(b.data.sendTransaction.id).toBe(a.data.sendTransaction.id);
    const c = await send(svc, { to: RECEIVER, value: '8' }, 'key-1');
    expect(c.errors![0].extensions.code).toBe('CONFLICT');

    const racing = await Promise.all(Array.from({ length: 20 }, () => send(svc, { to: RECEIVER, value: '9' }, 'key-2')));
    const ids = new Set(racing.map((r) => r.data?.sendTransaction?.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toBeTruthy();
    expect(await svc.rt.db.prisma.transaction.count({ where: { idempotencyKey: 'key-2' } })).toBe(1);
    await waitStatus(svc, a.data.sendTransaction.id, 'confirmed');
  });

  it('refuses requests that break a policy with a 400 naming the rule, and allocates no nonce for them', async () => {
    const before = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    expect(await badRequest({ to: RECEIVER, value: '1', validUntil: new Date(Date.now() - 1000).toISOString() })).toMatch(
      /^valid_until: must be in the future/,
    );

    await setPolicies({ whitelist_receivers: ['0x1111111111111111111111111111111111111111'] });
    expect(await badRequest({ to: RECEIVER, value: '1' })).toMatch(/^to: .* not in the relayer's whitelist_receivers policy/);
    await setPolicies({ whitelist_receivers: [RECEIVER.toLowerCase()] });
    await sendOk(svc, { to: RECEIVER, value: '1' });

    await setPolicies(null);
    await setPolicies({ gas_price_cap: 5_000_000_000 });
    expect(await badRequest({ to: RECEIVER, value: '1', gasPrice: '6000000000' })).toMatch(/^gas_price: .*exceeds the relayer's gas_price_cap/);
    expect(await badRequest({ to: RECEIVER, value: '1', maxFeePerGas: '6000000000', maxPriorityFeePerGas: '1' })).toMatch(/^max_fee_per_gas: .*gas_price_cap/);

    const balance = BigInt(await rpc(url, 'eth_getBalance', [DEV_ADDRESS, 'latest']));
    await setPolicies(null);
    await setPolicies({ min_balance: Number(balance - 10n ** 18n) });
    expect(await badRequest({ to: RECEIVER, value: (2n * 10n ** 18n).toString() })).toMatch(/^min_balance: /);
    await setPolicies({ min_balance: 0 });
    await sendOk(svc, { to: RECEIVER, value: '1' });

    const reverter = await deployReverter(url);
    expect(await badRequest({ to: reverter, value: '0', data: '0x12345678' })).toBe('gas_limit: estimation failed: execution reverted: nope');
    await setPolicies({ gas_limit_estimation: false });
    expect(await badRequest({ to: reverter, value: '0', data: '0x12345678' })).toMatch(/^gas_limit: required/);
    await setPolicies(null);

    const after = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    expect(after.nextNonce! - before.nextNonce!).toBe(2n);
  });

  it('prices with a legacy gas price when the eip1559_pricing policy is off, and honours explicit prices', async () => {
    await setPolicies({ eip1559_pricing: false });
    try {
      const a = await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
      expect(a.maxFeePerGas).toBeNull();
      expect(BigInt(a.gasPrice)).toBeGreaterThan(0n);
      expect((await rpc(url, 'eth_getTransactionByHash', [a.hash])).type).toBe('0x0');
    } finally {
      await setPolicies(null);
    }
    const b = await waitStatus(
      svc,
      (await sendOk(svc, { to: RECEIVER, value: '1', maxFeePerGas: '9000000000', maxPriorityFeePerGas: '2000000000' })).id,
      'confirmed',
    );
    expect(b).toMatchObject({ maxFeePerGas: '9000000000', maxPriorityFeePerGas: '2000000000', speed: null });
    const c = await waitStatus(svc, (await sendOk(svc, { to: RECEIVER, value: '1', gasPrice: '8000000000' })).id, 'confirmed');
    expect(c).toMatchObject({ gasPrice: '8000000000', maxFeePerGas: null });
  });

  it('ends a transaction that reverts on chain as failed, with the revert reason', async () => {
    const reverter = await deployReverter(url);
    const tx = await sendOk(svc, { to: reverter, value: '0', data: '0xabcdef01', gasLimit: 100_000 });
    const done = await waitStatus(svc, tx.id, 'failed');
    expect(done.statusReason).toMatch(/^execution reverted: nope; mined in block \d+$/);
    expect((await rpc(url, 'eth_getTransactionReceipt', [done.hash])).status).toBe('0x0');
    expect((await reportedStatuses(svc, tx.id)).at(-1)).toBe('failed');
  });

  it('resubmits a transaction not mined in time at the same nonce with both fees raised at least 10%', async () => {
    await withoutAutomine(async () => {
      const tx = await sendOk(svc);
      const first = await waitStatus(svc, tx.id, 'submitted');
      const resubmitted = await waitFor(svc, tx.id, (t) => t.hashes.length >= 2, 15_000);
      expect(resubmitted.nonce).toBe(first.nonce);
      expect(BigInt(resubmitted.maxFeePerGas) * 10n).toBeGreaterThanOrEqual(BigInt(first.maxFeePerGas) * 11n);
      expect(BigInt(resubmitted.maxPriorityFeePerGas) * 10n).toBeGreaterThanOrEqual(BigInt(first.maxPriorityFeePerGas) * 11n);
      expect(resubmitted.statusReason).toMatch(/resubmitted with higher fees/);
      await rpc(url, 'evm_mine');
      const done = await waitStatus(svc, tx.id, 'confirmed');
      expect(done.hashes).toContain(done.hash);
      expect(Number((await rpc(url, 'eth_getTransactionByHash', [done.hash])).nonce)).toBe(first.nonce);
    });
  });

  it('replaces an unmined transaction past valid_until with a 0-value self-transfer and ends it expired', async () => {
    await withoutAutomine(async () => {
      const tx = await sendOk(svc, { to: RECEIVER, value: '5', validUntil: new Date(Date.now() + 1500).toISOString() });
      const submitted = await waitStatus(svc, tx.id, 'submitted');
      await waitFor(svc, tx.id, (t) => /valid_until .* passed/.test(t.statusReason ?? ''), 15_000);
      const noopHash = (await waitBroadcast(svc, url, tx.id, (t) => t.to === DEV_ADDRESS.toLowerCase())).hash;
      await rpc(url, 'evm_mine');
      const done = await waitStatus(svc, tx.id, 'expired');
      expect(done.statusReason).toMatch(/not mined before valid_until/);
      expect(done.hash).toBe(noopHash);
      const onChain = await rpc(url, 'eth_getTransactionByHash', [noopHash]);
      expect(onChain).toMatchObject({ to: DEV_ADDRESS.toLowerCase(), value: '0x0' });
      expect(Number(onChain.nonce)).toBe(submitted.nonce);
    });
  });

  it('cancels a submitted transaction with a NOOP at its nonce, and refuses to cancel a final one', async () => {
    await withoutAutomine(async () => {
      const tx = await sendOk(svc, { to: RECEIVER, value: '77' });
      const submitted = await waitStatus(svc, tx.id, 'submitted');
      const r = await svc.gql(CANCEL, { relayerId: RELAYER, id: tx.id });
      expect(r.errors).toBeUndefined();
      expect(r.data.cancelTransaction.statusReason).toMatch(/cancellation requested/);
      const noop = await waitBroadcast(svc, url, tx.id, (t) => t.to === DEV_ADDRESS.toLowerCase());
      await rpc(url, 'evm_mine');
      const done = await waitStatus(svc, tx.id, 'canceled');
      expect(done.hash).toBe(noop.hash);
      const onChain = await rpc(url, 'eth_getTransactionByHash', [done.hash]);
      expect(onChain).toMatchObject({ to: DEV_ADDRESS.toLowerCase(), value: '0x0' });
      expect(Number(onChain.nonce)).toBe(submitted.nonce);
    });
    const confirmed = await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
    const again = await svc.gql(CANCEL, { relayerId: RELAYER, id: confirmed.id });
    expect(again.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST', detail: 'cannot cancel a transaction in status confirmed' });
  });

  it('cancels a transaction not yet sent at once, and still consumes its nonce so later ones are mined', async () => {
    proxy.set(false);
    let tx: Awaited<ReturnType<typeof sendOk>> | undefined;
    try {
      tx = await sendOk(svc, { to: RECEIVER, value: '1' });
      const r = await svc.gql(CANCEL, { relayerId: RELAYER, id: tx.id });
      expect(r.errors).toBeUndefined();
      expect(r.data.cancelTransaction.status).toBe('canceled');
    } finally {
      proxy.set(true);
    }
    const later = await sendOk(svc);
    expect(later.nonce).toBe(tx.nonce + 1);
    await waitStatus(svc, later.id, 'confirmed', 30_000);
    const canceled = await waitFor(svc, tx.id, (t) => t.hash !== null, 30_000);
    expect(canceled.status).toBe('canceled');
    const onChain = await rpc(url, 'eth_getTransactionByHash', [canceled.hash]);
    expect(Number(onChain.nonce)).toBe(tx.nonce);
    expect(onChain.to).toBe(DEV_ADDRESS.toLowerCase());
    expect(await reportedStatuses(svc, tx.id)).toEqual(['pending', 'canceled']);
  });

  it('replaces a pending transaction at the same nonce with a new payload and higher fees', async () => {
    await withoutAutomine(async () => {
      const tx = await sendOk(svc, { to: RECEIVER, value: '1' });
      const submitted = await waitStatus(svc, tx.id, 'submitted');
      const r = await svc.gql(REPLACE, { relayerId: RELAYER, id: tx.id, input: { to: RECEIVER, value: '2' } });
      expect(r.errors).toBeUndefined();
      expect(r.data.replaceTransaction).toMatchObject({ id: tx.id, nonce: submitted.nonce, value: '2' });
      // Wait for the new payload itself at the node (a resubmission of the old one may come first).
      const resent = (await waitBroadcast(svc, url, tx.id, (t) => t.value === '0x2')).tx;
      expect(BigInt(resent.maxFeePerGas) * 10n).toBeGreaterThanOrEqual(BigInt(submitted.maxFeePerGas) * 11n);
      await rpc(url, 'evm_mine');
      const done = await waitStatus(svc, tx.id, 'confirmed');
      const onChain = await rpc(url, 'eth_getTransactionByHash', [done.hash]);
      expect(onChain.value).toBe('0x2');
      expect(Number(onChain.nonce)).toBe(submitted.nonce);
    });
    const bad = await svc.gql(REPLACE, {
      relayerId: RELAYER,
      id: (await sendOk(svc)).id,
      input: { to: RECEIVER, value: '1', validUntil: '2000-01-01T00:00:00Z' },
    });
    expect(bad.errors![0].extensions.detail).toBe('valid_until: must be in the future');
  });

  it("reports mined until the network's required_confirmations are reached, then confirmed", async () => {
    const network = svc.rt.config.networks.get('evm:localnet')!;
    network.requiredConfirmations = 3;
    try {
      const tx = await sendOk(svc);
      const mined = await waitStatus(svc, tx.id, 'mined');
      expect(mined.confirmedAt).toBeNull();
      await rpc(url, 'evm_mine');
      await rpc(url, 'evm_mine');
      const done = await waitStatus(svc, tx.id, 'confirmed');
      expect(done.confirmedAt).not.toBeNull();
      expect(await reportedStatuses(svc, tx.id)).toEqual(['pending', 'sent', 'submitted', 'mined', 'confirmed']);
    } finally {
      network.requiredConfirmations = 1;
    }
  });

  it('accepts a transaction while the network is unreachable, and estimates, signs and sends it once it is back', async () => {
    await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
    proxy.set(false);
    let tx: Awaited<ReturnType<typeof sendOk>> | undefined;
    try {
      // With data, the gas limit needs an estimate from the node.
      tx = await sendOk(svc, { to: RECEIVER, value: '3', data: '0x1234' });
      const waiting = await waitFor(svc, tx.id, (t) => /network cannot be reached/.test(t.statusReason ?? ''));
      expect(waiting).toMatchObject({ status: 'pending', gasLimit: null, hash: null });
    } finally {
      proxy.set(true);
    }
    const done = await waitStatus(svc, tx.id, 'confirmed', 40_000);
    expect(done.gasLimit).toBeGreaterThanOrEqual(21000);
    expect(done.statusReason).toBeNull();
  });

  it('refuses new transactions while the relayer is paused', async () => {
    expect((await svc.gql(UPDATE, { id: RELAYER, input: { paused: true } })).errors).toBeUndefined();
    try {
      expect(await badRequest({ to: RECEIVER, value: '1' })).toMatch(/paused/);
    } finally {
      await svc.gql(UPDATE, { id: RELAYER, input: { paused: false } });
    }
    const tx = await getTx(svc, (await sendOk(svc)).id);
    expect(tx.status).not.toBe('failed');
  });

  it('sees relayer changes made elsewhere (another instance) on the very next send', async () => {
    // Written straight to the database, as another instance would: this one has only its own reads.
    const set = (data: object) => svc.rt.db.prisma.relayer.update({ where: { id: RELAYER }, data });
    await sendOk(svc);
    await set({ paused: true });
    try {
      expect(await badRequest({ to: RECEIVER, value: '1' })).toMatch(/paused/);
    } finally {
      await set({ paused: false });
    }
    await sendOk(svc);
    await set({ policies: { whitelist_receivers: ['0x1111111111111111111111111111111111111111'] } });
    try {
      expect(await badRequest({ to: RECEIVER, value: '1' })).toMatch(/whitelist_receivers/);
      await sendOk(svc, { to: '0x1111111111111111111111111111111111111111', value: '1' });
    } finally {
      await set({ policies: {} });
    }
    // A JSON null where SQL's NULL was (both read as null) is no change: the send goes through at once.
    await svc.rt.db.query(`UPDATE relayers SET custom_rpc_urls = 'null'::jsonb WHERE id = $1`, [RELAYER]);
    await sendOk(svc);
    await svc.rt.db.query('UPDATE relayers SET custom_rpc_urls = NULL WHERE id = $1', [RELAYER]);
    // 50 concurrent sends while the relayer is paused halfway: each is either refused as paused or
    // written before the pause, never after it.
    const sends = Array.from({ length: 50 }, () => send(svc, { to: RECEIVER, value: '1' }));
    const paused = await set({ paused: true });
    try {
      const results = await Promise.all(sends);
      for (const r of results.filter((x) => x.errors)) expect(r.errors![0].extensions.detail).toMatch(/paused/);
      const ids = results.flatMap((r) => (r.errors ? [] : [r.data.sendTransaction.id as string]));
      const written = await svc.rt.db.prisma.transaction.findMany({ where: { id: { in: ids } } });
      expect(written).toHaveLength(ids.length);
      for (const t of written) expect(t.createdAt.getTime()).toBeLessThanOrEqual(paused.updatedAt.getTime());
    } finally {
      await set({ paused: false });
    }
  });
});
