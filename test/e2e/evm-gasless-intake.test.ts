// Acceptance of operations sent at once (eth_sendUserOperation's groups, src/chains/evm/aa/rpc.ts):
// each send its own answer whatever the others in its group, the per-sender limit exact inside a
// group and counted from a re-acceptance, and validity windows judged by the chain's clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http, keccak256, type Chain, type Hex, type HttpTransport, type PublicClient } from 'viem';
import { createBundlerClient, formatUserOperationRequest, toPackedUserOperation, toSimple7702SmartAccount, type UserOperation } from 'viem/account-abstraction';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../src/chains/evm/anvil.js';
import { ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT } from '../../src/chains/evm/aa/canonical.js';
import { approvalTypedData, paymasterData, paymasterDeployment } from '../../src/chains/evm/aa/paymaster.js';
import { gaslessAnvil } from '../support/aa.js';
import { databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../support/service.js';

const BUNDLER = '/api/v1/relayers/evm-relayer/bundler';
const PM = paymasterDeployment(ENTRY_POINT_V08, DEV_ADDRESS, DEV_ADDRESS);
const TARGET = '0x000000000000000000000000000000000000dEaD';

type Ctx = { svc: TestService; chain: Chain; pub: PublicClient<HttpTransport, Chain> };

async function setup(db: 'pglite' | 'postgres'): Promise<Ctx> {
  // No workers: accepted operations stay pending (nothing is bundled), which is all these tests look at.
  const svc = await startTestService({
    db,
    anvil: true,
    workers: false,
    config: ({ rpcUrl }) => evmConfig(rpcUrl, { relayer: { policies: { user_operations: { paymaster: { address: PM.address } } } } }),
  });
  const { chain, pub } = await gaslessAnvil(svc.anvil!.url, [PM]);
  return { svc, chain, pub };
}

async function fresh(c: Ctx) {
  const owner = privateKeyToAccount(generatePrivateKey());
  const account = await toSimple7702SmartAccount({ client: c.pub, owner });
  const authorization = await owner.signAuthorization({ address: SIMPLE_7702_ACCOUNT, chainId: c.chain.id, nonce: 0 });
  return { owner, account, authorization };
}

/**
 * An operation prepared through the bundler route and signed, not sent. `approval`: the paymaster's
 * window of the test's choosing (signed with the relayer's key, as the relayer would), instead of the relayer's.
 */
async function signedOp(
  c: Ctx,
  user?: Awaited<ReturnType<typeof fresh>>,
  opts: { nonce?: bigint; approval?: { validUntil: number; validAfter: number } } = {},
) {
  const u = user ?? (await fresh(c));
  const bundler = createBundlerClient({
    account: u.account,
    client: c.pub,
    chain: c.chain,
    paymaster: true,
    transport: http(`http://relayer.test${BUNDLER}`, {
      retryCount: 0,
      fetchFn: (input, init) => c.svc.app.fetch(new Request(input as string, init)),
      fetchOptions: { headers: { authorization: `Bearer ${c.svc.apiKey}` } },
    }),
  });
  const op = (await bundler.prepareUserOperation({
    calls: [{ to: TARGET, data: '0x' }],
    authorization: u.authorization,
    ...(opts.nonce !== undefined ? { nonce: opts.nonce } : {}),
  })) as UserOperation<'0.8'>;
  if (opts.approval) {
    const packed = toPackedUserOperation({ ...op, paymasterData: '0x' });
    const approval = await mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC).signTypedData(approvalTypedData(packed, op.paymaster!, c.chain.id, opts.approval));
    op.paymasterData = paymasterData(opts.approval, approval);
  }
  op.signature = await u.account.signUserOperation(op as never);
  return { ...u, op, json: formatUserOperationRequest(op) };
}

/** Each JSON-RPC call as a request of its own, all at once: the bundler groups what arrives together. */
async function sendAtOnce(c: Ctx, jsons: unknown[]): Promise<{ result?: Hex; error?: { code: number; message: string } }[]> {
  return Promise.all(
    jsons.map(async (json, id) => {
      const res = await c.svc.request(
        'POST',
        BUNDLER,
        JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_sendUserOperation', params: [json, ENTRY_POINT_V08] }),
        {
          authorization: `Bearer ${c.svc.apiKey}`,
          'content-type': 'application/json',
        },
      );
      expect(res.status).toBe(200);
      return (await res.json()) as never;
    }),
  );
}

const rowsOf = async (c: Ctx, sender: string) =>
  (await c.svc.rt.db.prisma.userOperation.findMany()).filter((r) => r.sender.toLowerCase() === sender.toLowerCase());

async function setPolicy(c: Ctx, userOperations: object) {
  const res = await c.svc.request('PATCH', '/api/v1/relayers/evm-relayer', { policies: { user_operations: userOperations } });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe.each(await databaseKinds())('operations sent at once (%s)', (db) => {
  let c: Ctx;
  beforeAll(async () => {
    c = await setup(db);
  }, 120_000);
  afterAll(() => c?.svc.stop());

  it('each gets its own answer: accepted, refused by the policy, failing simulation, and the same operation twice', async () => {
    const good = await Promise.all([0, 1, 2, 3, 4].map(() => signedOp(c)));
    const [a, b, bad, stale, foreign] = await Promise.all([0, 1, 2, 3, 4].map(() => signedOp(c)));
    // Signed by someone else: the account's validation says so (not a revert).
    const badSig = { ...bad!.json, signature: await privateKeyToAccount(generatePrivateKey()).sign({ hash: keccak256('0x01') }) };
    // A nonce the account has not reached: the EntryPoint refuses it in simulation (AA25).
    const staleNonce = { json: { ...stale!.json, nonce: '0x7' } };
    const otherPaymaster = { ...foreign!.json, paymaster: '0x2222222222222222222222222222222222222222' };
    const sent = [
      good[0]!.json,
      badSig,
      good[1]!.json,
      a!.json,
      otherPaymaster,
      good[2]!.json,
      a!.json,
      staleNonce.json,
      good[3]!.json,
      { ...b!.json, callGasLimit: 'not a number' },
      good[4]!.json,
      a!.json,
    ];
    const answers = await sendAtOnce(c, sent);
    const hashOf = (o: Awaited<ReturnType<typeof signedOp>>) =>
      c.svc.rt.db.prisma.userOperation.findFirstOrThrow({ where: { sender: o.account.address } }).then((r) => r.hash);
    const goodHashes = await Promise.all(good.map(hashOf));
    const aHash = await hashOf(a!);
    expect(answers.map((x) => x.result ?? x.error!.code)).toEqual([
      goodHashes[0],
      -32507,
      goodHashes[1],
      aHash,
      -32602,
      goodHashes[2],
      aHash,
      -32500,
      goodHashes[3],
      -32602,
      goodHashes[4],
      aHash,
    ]);
    expect(answers[1]!.error!.message).toMatch(/account's signature check failed/);
    expect(answers[4]!.error!.message).toMatch(/paymaster: this bundler takes operations its relayer's paymaster/);
    expect(answers[7]!.error!.message).toMatch(/AA25/);
    expect(answers[9]!.error!.message).toMatch(/callGasLimit/);
    // One row each for those accepted (the one sent three times too), none for the refused.
    for (const o of [...good, a!]) expect(await rowsOf(c, o.account.address)).toMatchObject([{ status: 'pending' }]);
    for (const o of [bad!, stale!, foreign!, b!]) expect(await rowsOf(c, o.account.address)).toEqual([]);
    // Sent again later: the same answer, nothing new.
    expect((await sendAtOnce(c, [a!.json, good[0]!.json])).map((x) => x.result)).toEqual([aHash, goodHashes[0]]);
    expect(await rowsOf(c, a!.account.address)).toHaveLength(1);
  }, 90_000);

  it('the per-sender limit holds inside a group: of 5 from one sender (one twice) with a limit of 2, 2 are kept', async () => {
    await setPolicy(c, { paymaster: { address: PM.address }, sponsorship: { max_operations_per_sender_per_hour: 2 } });
    try {
      const user = await fresh(c);
      const other = await signedOp(c);
      const ops = await Promise.all([1n, 2n, 3n, 4n, 5n].map((k) => signedOp(c, user, { nonce: k << 64n })));
      const answers = await sendAtOnce(c, [...ops.map((o) => o.json), ops[0]!.json, other.json]);
      const kept = await rowsOf(c, user.owner.address);
      expect(kept).toHaveLength(2);
      const keptHashes = new Set(kept.map((r) => r.hash));
      for (const [i, x] of answers.slice(0, 5).entries()) {
        if (x.result) expect(keptHashes.has(x.result)).toBe(true);
        else
          expect(x.error, `send ${i}`).toMatchObject({
            code: -32504,
            message: expect.stringMatching(/sent 2 operations in the last hour, the relayer's max_operations_per_sender_per_hour is 2/),
          });
      }
      expect(answers.slice(0, 5).filter((x) => x.result)).toHaveLength(2);
      // The same operation twice: the same answer.
      expect({ ...answers[5], id: 0 }).toEqual(answers[0]);
      // Another sender is not counted with this one.
      expect(answers[6]!.result).toMatch(/^0x[0-9a-f]{64}$/);
    } finally {
      await setPolicy(c, { paymaster: { address: PM.address } });
    }
  }, 90_000);

  it('an operation accepted again after it failed counts against the limit from then, not from its first acceptance', async () => {
    await setPolicy(c, { paymaster: { address: PM.address }, sponsorship: { max_operations_per_sender_per_hour: 2 } });
    try {
      const user = await fresh(c);
      const [first, second, third] = await Promise.all([1n, 2n, 3n].map((k) => signedOp(c, user, { nonce: k << 64n })));
      const [{ result: hash }] = await sendAtOnce(c, [first!.json]);
      // Its first acceptance two hours ago, and it failed since.
      const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
      await c.svc.rt.db.prisma.userOperation.updateMany({
        where: { hash },
        data: { status: 'failed', statusReason: 'its bundle was dropped', createdAt: twoHoursAgo, acceptedAt: twoHoursAgo },
      });
      expect((await sendAtOnce(c, [first!.json]))[0]!.result).toBe(hash);
      expect(await rowsOf(c, user.owner.address)).toMatchObject([{ hash, status: 'pending', createdAt: twoHoursAgo }]);
      // It counts as sent this hour: one more fits, then the limit.
      const [two, three] = [(await sendAtOnce(c, [second!.json]))[0]!, (await sendAtOnce(c, [third!.json]))[0]!];
      expect(two.result).toMatch(/^0x/);
      expect(three.error).toMatchObject({ code: -32504, message: expect.stringMatching(/sent 2 operations in the last hour/) });
    } finally {
      await setPolicy(c, { paymaster: { address: PM.address } });
    }
  }, 90_000);

  // Last: it moves the chain's clock an hour ahead of this machine's.
  it("judges validity windows by the chain's time, not this machine's", async () => {
    const latest = async () => Number((await c.pub.getBlock()).timestamp);
    await c.pub.request({ method: 'evm_increaseTime' as never, params: [3600] as never });
    await c.pub.request({ method: 'evm_mine' as never, params: [] as never });
    await new Promise((r) => setTimeout(r, 1100)); // past the relayer's memo of the chain's time
    const wall = Math.floor(Date.now() / 1000);
    expect((await latest()) - wall).toBeGreaterThan(3500);
    const [closed, begun, own] = await Promise.all([
      // Open for ten more minutes by this machine's clock, ended by the chain's.
      signedOp(c, undefined, { approval: { validUntil: wall + 600, validAfter: 0 } }),
      // Not begun for ten minutes by this machine's clock, begun by the chain's.
      signedOp(c, undefined, { approval: { validUntil: wall + 7200, validAfter: wall + 600 } }),
      // The relayer's own approval (pm_getPaymasterData): its window from the chain's time.
      signedOp(c),
    ]);
    const [x, y, z] = await sendAtOnce(c, [closed.json, begun.json, own.json]);
    expect(x!.error).toMatchObject({ code: -32503, message: expect.stringMatching(/the paymaster's validity ends at/) });
    expect(y!.result).toMatch(/^0x[0-9a-f]{64}$/);
    expect(z!.result).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await rowsOf(c, closed.account.address)).toEqual([]);
    expect((await rowsOf(c, own.account.address))[0]!.validUntil!.getTime() / 1000).toBeGreaterThan(wall + 3600);
  }, 90_000);
});
