// The relayer's own paymaster: what the funding step decides (pure), and on anvil with the whole
// service, on both databases: deployed once through the relayer's ordinary transactions, funded,
// not deployed again by a restart or a second instance, topped up after a withdrawal.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeFunctionData, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../../../src/chains/evm/anvil.js';
import { CREATE2_DEPLOYER, ENTRY_POINT_V07, ENTRY_POINT_V08, placeCanonicalContracts } from '../../../../src/chains/evm/aa/canonical.js';
import {
  DEPOSIT_CALL,
  fundingKey,
  fundPaymasters,
  nextLookMs,
  paymasterStatus,
  planFunding,
  relayerPaymaster,
  type FundingSeen,
} from '../../../../src/chains/evm/aa/funding.js';
import { relayerPaymasterAbi } from '../../../../src/chains/evm/aa/paymaster.js';
import type { Runtime } from '../../../../src/core/runtime.js';
import { createTestDatabase, databaseKinds } from '../../../support/postgres.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../../../support/service.js';

const ETH = 10n ** 18n;
const target = { deposit: ETH, minDeposit: ETH / 2n };
const seen = (over: Partial<FundingSeen> = {}): FundingSeen => ({ entryPoint: true, deployed: true, balance: 0n, deploys: [], deposits: [], ...over });

describe('planFunding', () => {
  it('waits for the EntryPoint to exist', () => {
    expect(planFunding(target, seen({ entryPoint: false, deployed: false }))).toEqual({ kind: 'wait', why: expect.stringMatching(/no EntryPoint/) });
  });

  it('deploys when there is no code and no deploy, else waits for the one under way', () => {
    expect(planFunding(target, seen({ deployed: false }))).toEqual({ kind: 'deploy', attempt: 0 });
    for (const s of ['pending', 'sent', 'submitted', 'mined'] as const) expect(planFunding(target, seen({ deployed: false, deploys: [s] })).kind).toBe('wait');
  });

  it('tries again after attempts that ended without effect, numbering the next one', () => {
    expect(planFunding(target, seen({ deployed: false, deploys: ['failed', 'expired', 'canceled'] }))).toEqual({ kind: 'deploy', attempt: 3 });
  });

  it('never deploys again after a confirmed deploy, even when the chain shows no code', () => {
    expect(planFunding(target, seen({ deployed: false, deploys: ['failed', 'confirmed'] }))).toEqual({
      kind: 'wait',
      why: expect.stringMatching(/confirmed/),
    });
  });

  it('deposits nothing before the paymaster has code', () => {
    expect(planFunding(target, seen({ deployed: false, deploys: ['submitted'] })).kind).toBe('wait');
  });

  it('deposits up to `deposit` when below min_deposit, one deposit at a time', () => {
    expect(planFunding(target, seen({ deploys: ['confirmed'] }))).toEqual({ kind: 'deposit', attempt: 0, amount: ETH });
    expect(planFunding(target, seen({ balance: ETH / 2n, deposits: ['confirmed'] }))).toEqual({ kind: 'done' });
    expect(planFunding(target, seen({ balance: ETH / 2n - 1n, deposits: ['confirmed'] }))).toEqual({ kind: 'deposit', attempt: 1, amount: ETH / 2n + 1n });
    expect(planFunding(target, seen({ balance: 0n, deposits: ['confirmed', 'mined'] })).kind).toBe('wait');
    expect(planFunding(target, seen({ balance: 0n, deposits: ['confirmed', 'failed'] }))).toEqual({ kind: 'deposit', attempt: 2, amount: ETH });
  });

  it('without min_deposit deposits once, never tops up', () => {
    const once = { deposit: ETH, minDeposit: null };
    expect(planFunding(once, seen())).toEqual({ kind: 'deposit', attempt: 0, amount: ETH });
    expect(planFunding(once, seen({ balance: ETH / 10n, deposits: ['confirmed'] }))).toEqual({ kind: 'done' });
    // A deposit made by someone else is kept: the relayer tops it up to `deposit` once.
    expect(planFunding(once, seen({ balance: ETH / 10n }))).toEqual({ kind: 'deposit', attempt: 0, amount: (ETH * 9n) / 10n });
  });

  it('does nothing when min_deposit is above deposit and the balance is already at deposit', () => {
    expect(planFunding({ deposit: ETH, minDeposit: 2n * ETH }, seen({ balance: ETH, deposits: ['confirmed'] }))).toEqual({ kind: 'done' });
  });

  it('keys name the paymaster, the kind and the attempt', () => {
    const pm = relayerPaymaster({ address: DEV_ADDRESS }, ENTRY_POINT_V08).address;
    expect(fundingKey(pm, 'deploy', 0)).toBe(`paymaster:${pm.toLowerCase()}:deploy:0`);
    expect(fundingKey(pm, 'deploy', 0)).not.toBe(fundingKey(relayerPaymaster({ address: DEV_ADDRESS }, ENTRY_POINT_V07).address, 'deploy', 0));
  });

  it('looks again sooner while something is under way', () => {
    const o = (kind: 'done' | 'wait') => ({ entryPoint: ENTRY_POINT_V08, paymaster: ENTRY_POINT_V08, action: kind === 'done' ? { kind } : { kind, why: '' } });
    expect(nextLookMs([o('wait')], 1_000)).toBeLessThan(nextLookMs([o('done')], 1_000));
    expect(nextLookMs([o('done')], 12_000)).toBe(48_000);
    expect(nextLookMs([o('done')], 60_000)).toBe(60_000);
  });
});

// ---- on anvil, with the service ----

const POLICY = { user_operations: { entry_points: [ENTRY_POINT_V08], paymaster: { deploy: true, deposit: String(ETH), min_deposit: String(ETH / 2n) } } };
const config = (rpcUrl: string) => evmConfig(rpcUrl, { relayer: { policies: POLICY } });
const RELAYER = 'evm-relayer';
const pm = relayerPaymaster({ address: DEV_ADDRESS }, ENTRY_POINT_V08);
const OTHER = '0x000000000000000000000000000000000000bEEF';
/** anvil's dev account #4 places the canonical contracts; the relayer is #0. */
const placerKey = (): Hex => `0x${Buffer.from(mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 4 }).getHdKey().privateKey!).toString('hex')}`;

async function relayerRow(rt: Runtime) {
  return rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
}

/** The relayer's transactions that are the paymaster's deploy and its deposits, as the database has them. */
async function fundingRows(rt: Runtime) {
  const rows = await rt.db.prisma.transaction.findMany({ where: { relayerId: RELAYER }, orderBy: { createdAt: 'asc' } });
  return {
    all: rows,
    deploys: rows.filter((r) => r.to?.toLowerCase() === CREATE2_DEPLOYER.toLowerCase() && r.data === pm.data.toLowerCase()),
    deposits: rows.filter((r) => r.to?.toLowerCase() === pm.address.toLowerCase() && r.data === DEPOSIT_CALL),
  };
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v: T;
  for (;;) {
    v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last ${JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits until the relayer has `n` transactions, all confirmed. */
const confirmed = (rt: Runtime, n: number) =>
  until(
    `${n} confirmed transactions`,
    async () => (await fundingRows(rt)).all.map((r) => r.status),
    (st) => st.length === n && st.every((x) => x === 'confirmed'),
  );

const status = async (rt: Runtime) => paymasterStatus(rt, await relayerRow(rt), ENTRY_POINT_V08);
const funded = (rt: Runtime, balance = ETH) =>
  until(
    'paymaster deployed and funded',
    () => status(rt),
    (s) => s.deployed && s.balance === balance,
  );

describe.each(await databaseKinds())('the relayer paymaster on anvil, %s', (kind) => {
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.stop();
  });

  it('is deployed once and funded through ordinary relayer transactions; a restart deploys nothing; a withdrawal is topped up', async () => {
    svc = await startTestService({ db: kind, anvil: true });
    const before = await status(svc.rt);
    expect(before).toMatchObject({ address: pm.address, deployed: false, balance: 0n, funded: false });
    await placeCanonicalContracts(svc.anvil!.url, placerKey());
    // The policy given as the README gives it: through the API.
    const patched = await svc.request('PATCH', `/api/v1/relayers/${RELAYER}`, { policies: POLICY });
    expect(patched.status, await patched.clone().text()).toBe(200);

    const s = await funded(svc.rt);
    expect(s.funded).toBe(true);
    await confirmed(svc.rt, 2);
    let rows = await fundingRows(svc.rt);
    expect(rows.deploys.map((r) => [r.status, r.idempotencyKey])).toEqual([['confirmed', `paymaster:${pm.address.toLowerCase()}:deploy:0`]]);
    expect(rows.deposits.map((r) => [r.status, r.value])).toEqual([['confirmed', String(ETH)]]);
    // Ordinary transactions of the relayer: from its account, with its nonces, in order.
    expect(rows.all.map((r) => [r.from, r.nonce])).toEqual([
      [DEV_ADDRESS, 0n],
      [DEV_ADDRESS, 1n],
    ]);
    const owner = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    const onChainOwner = await paymasterOwner(svc.anvil!.url);
    expect(onChainOwner.toLowerCase()).toBe(owner.address.toLowerCase());

    // A restart, and passes run by hand besides the loop: nothing new.
    svc = await svc.restart();
    const r = await relayerRow(svc.rt);
    const passes = await Promise.all([fundPaymasters(svc.rt, r), fundPaymasters(svc.rt, r)]);
    expect(passes.flat().map((o) => o.action.kind)).toEqual(['done', 'done']);
    await new Promise((res) => setTimeout(res, 2_500));
    rows = await fundingRows(svc.rt);
    expect([rows.all.length, rows.deploys.length, rows.deposits.length]).toEqual([2, 1, 1]);

    // The owner (the relayer's account, through the relayer) withdraws 0.6 ETH: 0.4 left, below min_deposit.
    const withdraw = encodeFunctionData({ abi: relayerPaymasterAbi, functionName: 'withdrawTo', args: [OTHER, (ETH * 6n) / 10n] });
    const sent = await svc.gql(`mutation($input: SendTransactionInput!) { sendTransaction(relayerId: "${RELAYER}", input: $input) { id } }`, {
      input: { to: pm.address, data: withdraw, value: '0' },
    });
    expect(sent.errors).toBeUndefined();
    await until(
      'withdrawn',
      () => status(svc!.rt),
      (st) => st.balance === (ETH * 4n) / 10n,
    );
    await funded(svc.rt);
    await confirmed(svc.rt, 4);
    rows = await fundingRows(svc.rt);
    expect(rows.deposits.map((d) => [d.status, d.value, d.idempotencyKey])).toEqual([
      ['confirmed', String(ETH), `paymaster:${pm.address.toLowerCase()}:deposit:0`],
      ['confirmed', String((ETH * 6n) / 10n), `paymaster:${pm.address.toLowerCase()}:deposit:1`],
    ]);
    expect(rows.deploys).toHaveLength(1);
  }, 120_000);
});

async function paymasterOwner(url: string): Promise<string> {
  const data = encodeFunctionData({ abi: relayerPaymasterAbi, functionName: 'owner' });
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: pm.address, data }, 'latest'] }),
  });
  const { result } = (await res.json()) as { result: Hex };
  return `0x${result.slice(-40)}`;
}

describe.runIf((await databaseKinds()).includes('postgres'))('two instances on one PostgreSQL database', () => {
  const services: TestService[] = [];
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  afterAll(async () => {
    for (const s of services.reverse()) await s.stop();
    await database?.drop();
  });

  it('deploy and deposit once between them', async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url };
    const a = await startTestService({ anvil: true, env, config: (c) => config(c.rpcUrl) });
    services.push(a);
    const b = await startTestService({ env, config: () => config(a.anvil!.url) });
    services.push(b);
    await placeCanonicalContracts(a.anvil!.url, placerKey());
    // Both loops race, and passes by hand on both instances at once besides.
    const [ra, rb] = await Promise.all([relayerRow(a.rt), relayerRow(b.rt)]);
    await Promise.all([fundPaymasters(a.rt, ra), fundPaymasters(b.rt, rb), fundPaymasters(b.rt, rb)]);
    await funded(a.rt);
    await confirmed(a.rt, 2);
    await new Promise((res) => setTimeout(res, 2_500));
    const rows = await fundingRows(b.rt);
    expect(rows.deploys.map((r) => r.status)).toEqual(['confirmed']);
    expect(rows.deposits.map((r) => [r.status, r.value])).toEqual([['confirmed', String(ETH)]]);
    expect(rows.all).toHaveLength(2);
    expect((await status(b.rt)).balance).toBe(ETH);
  }, 120_000);
});
