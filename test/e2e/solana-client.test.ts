import {
  AccountRole,
  address,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  signBytes,
  type Address,
  type Blockhash,
  type Instruction,
  type SignatureBytes,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkSolanaPolicy,
  checkSolanaTx,
  createSolanaRpc,
  decodeSolanaTx,
  prepareSolanaTx,
  solanaPolicySchema,
  SolanaRequestError,
  submitSolanaTx,
  type SolanaPolicy,
  type SolanaRpc,
  type SolanaSignerLike,
} from '../../src/chains/solana/index.js';
import { startSolanaRpc, type SolanaRpcStub } from '../support/solana-rpc.js';
import {
  buildTx,
  COMPUTE_BUDGET,
  NO_BLOCKHASH as ZERO_BLOCKHASH,
  party,
  setComputeUnitLimit,
  SOL,
  SYSTEM,
  transferSol,
  type Party,
} from '../chains/solana/support.js';

const TOKEN = address('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');

function signerFor(p: Party): SolanaSignerLike {
  return { kind: 'solana', address: p.address, sign: (msg) => signBytes(p.keyPair.privateKey, msg) };
}

let relayerParty: Party;
let relayer: SolanaSignerLike;
let user: Party;
let dest: Party;
let stub: SolanaRpcStub;
let rpc: SolanaRpc;

beforeAll(async () => {
  [relayerParty, user, dest] = await Promise.all([party(), party(), party()]);
  relayer = signerFor(relayerParty);
  stub = await startSolanaRpc({
    airdrops: [
      { address: relayer.address, lamports: 10n * SOL },
      { address: user.address, lamports: 5n * SOL },
    ],
    slotMs: 50,
    blockhashLifetime: 20,
  });
  rpc = createSolanaRpc([{ url: stub.url, weight: 100 }], { timeoutMs: 2_000 });
});
afterAll(() => stub?.stop());

async function latestBlockhash(): Promise<Blockhash> {
  return (await rpc.getLatestBlockhash()).blockhash as Blockhash;
}

async function waitForStatus(signature: string, lastValidBlockHeight: bigint | null, want: string[], timeoutMs = 4_000) {
  const until = Date.now() + timeoutMs;
  const seen: string[] = [];
  for (;;) {
    const s = await checkSolanaTx(rpc, signature, { lastValidBlockHeight });
    if (seen.at(-1) !== s.status) seen.push(s.status);
    if (want.includes(s.status)) return { last: s, seen };
    if (Date.now() > until) throw new Error(`timed out waiting for ${want.join('|')}, saw ${seen.join(' -> ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function expectRequestError(p: Promise<unknown>, field: string, pattern: RegExp) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SolanaRequestError);
  expect((err as SolanaRequestError).field).toBe(field);
  expect((err as Error).message).toMatch(pattern);
}

async function userTransfer(amount = SOL / 10n, blockhash?: Blockhash) {
  return buildTx(relayer.address as Address, [transferSol(user.address, dest.address, amount)], blockhash ?? (await latestBlockhash()), [user.keyPair]);
}

describe('solana rpc client', () => {
  it('reads blockhash, block height and balances', async () => {
    const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash();
    expect(blockhash).toBe(stub.svm.latestBlockhash());
    expect(lastValidBlockHeight).toBeGreaterThan(await rpc.getBlockHeight());
    expect(await rpc.getBalance(user.address)).toBe(5n * SOL);
    const h = await rpc.getBlockHeight('processed');
    await new Promise((r) => setTimeout(r, 150));
    expect(await rpc.getBlockHeight('processed')).toBeGreaterThan(h);
  });

  it('fails over from a dead endpoint', async () => {
    const client = createSolanaRpc([
      { url: 'http://127.0.0.1:1', weight: 100 },
      { url: stub.url, weight: 1 },
    ]);
    for (let i = 0; i < 3; i++) expect(await client.getBalance(user.address)).toBeGreaterThan(0n);
  });
});

describe('solana: prepare, sign, submit, confirm', () => {
  it('relays a user-signed transfer with the relayer as fee payer', async () => {
    const destBefore = (await rpc.getBalance(dest.address)) ?? 0n;
    const relayerBefore = await rpc.getBalance(relayer.address);
    const wire = await userTransfer();
    const decoded = decodeSolanaTx(wire);

    const prepared = await prepareSolanaTx(
      { transaction: wire },
      { signer: relayer, rpc, policy: { max_allowed_fee_lamports: 10_000, min_balance: 1_000_000 } },
    );
    expect(prepared.fee).toBe(10_000n);
    // The user's blockhash was current, so it and the user's signature are kept.
    expect(prepared.blockhash).toBe(decoded.message.lifetimeToken);
    const signed = getTransactionDecoder().decode(Buffer.from(prepared.wireBase64, 'base64'));
    expect(Array.from(signed.signatures[user.address]!)).toEqual(Array.from(decoded.transaction.signatures[user.address]!));

    expect(await submitSolanaTx(rpc, prepared.wireBase64)).toEqual({ outcome: 'submitted', signature: prepared.signature });
    const { last, seen } = await waitForStatus(prepared.signature, prepared.lastValidBlockHeight, ['confirmed', 'failed']);
    expect(last.status).toBe('confirmed');
    expect(seen).toContain('mined');
    expect(await rpc.getBalance(dest.address)).toBe(destBefore + SOL / 10n);
    expect(await rpc.getBalance(relayer.address)).toBe(relayerBefore - 10_000n);
  });

  it('fills in a missing blockhash and refreshes an expired one', async () => {
    const noBlockhash = await buildTx(relayer.address as Address, [setComputeUnitLimit(50_000)], ZERO_BLOCKHASH);
    const prepared = await prepareSolanaTx({ transaction: noBlockhash }, { signer: relayer, rpc });
    expect(prepared.blockhash).toBe(stub.svm.latestBlockhash());
    expect(prepared.lastValidBlockHeight).toBeGreaterThan(0n);
    expect((await submitSolanaTx(rpc, prepared.wireBase64)).outcome).toBe('submitted');
    expect((await waitForStatus(prepared.signature, prepared.lastValidBlockHeight, ['confirmed', 'failed'])).last.status).toBe('confirmed');

    const old = await latestBlockhash();
    stub.advance(25); // past the blockhash lifetime
    const stale = await buildTx(relayer.address as Address, [setComputeUnitLimit(60_000)], old);
    const refreshed = await prepareSolanaTx({ transaction: stale }, { signer: relayer, rpc });
    expect(refreshed.blockhash).not.toBe(old);
    expect((await submitSolanaTx(rpc, refreshed.wireBase64)).outcome).toBe('submitted');
  });

  it('reports expiry past lastValidBlockHeight, then resubmits with a fresh blockhash', async () => {
    const wire = await buildTx(relayer.address as Address, [setComputeUnitLimit(70_000)], await latestBlockhash());
    const first = await prepareSolanaTx({ transaction: wire }, { signer: relayer, rpc });
    // Never sent (as if dropped): pending until its blockhash is past, then expired.
    expect(await checkSolanaTx(rpc, first.signature, { lastValidBlockHeight: first.lastValidBlockHeight })).toEqual({ status: 'pending' });
    stub.advance(30);
    expect(await checkSolanaTx(rpc, first.signature, { lastValidBlockHeight: first.lastValidBlockHeight })).toMatchObject({ status: 'expired' });
    // A node that no longer knows the blockhash says so on submission.
    expect(await submitSolanaTx(rpc, first.wireBase64)).toMatchObject({ outcome: 'expired' });

    const again = await prepareSolanaTx({ transaction: first.wireBase64 }, { signer: relayer, rpc, resubmit: true });
    expect(again.signature).not.toBe(first.signature);
    expect(again.lastValidBlockHeight!).toBeGreaterThan(first.lastValidBlockHeight!);
    expect((await submitSolanaTx(rpc, again.wireBase64)).outcome).toBe('submitted');
    expect((await waitForStatus(again.signature, again.lastValidBlockHeight, ['confirmed', 'failed', 'expired'])).last.status).toBe('confirmed');
  });

  it('cannot refresh the blockhash when other signers have signed', async () => {
    const old = await latestBlockhash();
    stub.advance(25);
    const wire = await userTransfer(SOL / 100n, old);
    await expectRequestError(prepareSolanaTx({ transaction: wire }, { signer: relayer, rpc }), 'transaction', /other signers have signed/);
  });
});

describe('solana: rejections', () => {
  it('requires the relayer as fee payer', async () => {
    const wire = await buildTx(user.address, [transferSol(user.address, dest.address, 1_000_000n)], await latestBlockhash(), [user.keyPair]);
    await expectRequestError(
      prepareSolanaTx({ transaction: wire }, { signer: relayer, rpc }),
      'transaction',
      new RegExp(`fee payer must be the relayer ${relayer.address}`),
    );
  });

  it('rejects malformed input and missing co-signatures', async () => {
    await expectRequestError(prepareSolanaTx({ transaction: 'not base64!' }, { signer: relayer, rpc }), 'transaction', /base64/);
    await expectRequestError(prepareSolanaTx({ transaction: 'AAAA' }, { signer: relayer, rpc }), 'transaction', /not a valid Solana wire transaction/);
    const unsignedByUser = await buildTx(relayer.address as Address, [transferSol(user.address, dest.address, 1_000_000n)], await latestBlockhash());
    await expectRequestError(
      prepareSolanaTx({ transaction: unsignedByUser }, { signer: relayer, rpc }),
      'transaction',
      new RegExp(`missing signature of required signer ${user.address}`),
    );
  });

  it('rejects a tampered co-signature at submission', async () => {
    const wire = await userTransfer();
    const tx = getTransactionDecoder().decode(Buffer.from(wire, 'base64'));
    const sig = new Uint8Array(tx.signatures[user.address]!);
    sig[10] ^= 0xff;
    const tampered = getBase64EncodedWireTransaction({ ...tx, signatures: { ...tx.signatures, [user.address]: sig as SignatureBytes } });
    const prepared = await prepareSolanaTx({ transaction: tampered }, { signer: relayer, rpc });
    expect(await submitSolanaTx(rpc, prepared.wireBase64)).toEqual({ outcome: 'rejected', reason: 'signature verification failed' });
  });

  it('rejects a co-signature made by the wrong key', async () => {
    const stranger = await party();
    const wire = await userTransfer();
    const tx = getTransactionDecoder().decode(Buffer.from(wire, 'base64'));
    const wrong = await signBytes(stranger.keyPair.privateKey, tx.messageBytes);
    const forged = Buffer.from(getTransactionEncoder().encode({ ...tx, signatures: { ...tx.signatures, [user.address]: wrong } })).toString('base64');
    const prepared = await prepareSolanaTx({ transaction: forged }, { signer: relayer, rpc });
    expect(await submitSolanaTx(rpc, prepared.wireBase64)).toMatchObject({ outcome: 'rejected' });
    expect(await checkSolanaTx(rpc, prepared.signature)).toEqual({ status: 'pending' });
  });

  it('rejects when the fee payer cannot pay the fee', async () => {
    const broke = await party();
    const wire = await buildTx(broke.address, [setComputeUnitLimit(10_000)], await latestBlockhash());
    const prepared = await prepareSolanaTx({ transaction: wire }, { signer: signerFor(broke), rpc });
    expect(await submitSolanaTx(rpc, prepared.wireBase64)).toMatchObject({
      outcome: 'rejected',
      reason: expect.stringMatching(/preflight failed: (AccountNotFound|InsufficientFundsForFee)/),
    });
  });

  it('reports a transaction that lands with an error as failed', async () => {
    const wire = await userTransfer(100n * SOL);
    const prepared = await prepareSolanaTx({ transaction: wire }, { signer: relayer, rpc });
    expect(await submitSolanaTx(rpc, prepared.wireBase64)).toMatchObject({ outcome: 'rejected', reason: expect.stringMatching(/InstructionError/) });
    // Skipping preflight, it lands, pays the fee and fails.
    expect(await submitSolanaTx(rpc, prepared.wireBase64, { skipPreflight: true })).toEqual({ outcome: 'submitted', signature: prepared.signature });
    const { last } = await waitForStatus(prepared.signature, prepared.lastValidBlockHeight, ['failed', 'confirmed']);
    expect(last).toMatchObject({ status: 'failed', reason: expect.stringMatching(/InstructionError.*Custom/) });
  });
});

describe('solana policy', () => {
  async function expectViolation(policy: SolanaPolicy, rule: string, wire?: string) {
    await expectRequestError(
      prepareSolanaTx({ transaction: wire ?? (await userTransfer()) }, { signer: relayer, rpc, policy }),
      `policy.${rule}`,
      new RegExp(`policy ${rule}:`),
    );
  }

  it('enforces program and account lists', async () => {
    await expectViolation({ allowed_programs: [COMPUTE_BUDGET] }, 'allowed_programs');
    await expectViolation({ disallowed_accounts: [dest.address] }, 'disallowed_accounts');
    await expectViolation({ allowed_accounts: [user.address] }, 'allowed_accounts');
    await expect(
      prepareSolanaTx(
        { transaction: await userTransfer() },
        { signer: relayer, rpc, policy: { allowed_programs: [SYSTEM], allowed_accounts: [user.address, dest.address] } },
      ),
    ).resolves.toMatchObject({ signature: expect.any(String) });
  });

  it('enforces size, signature and fee limits', async () => {
    await expectViolation({ max_signatures: 1 }, 'max_signatures');
    await expectViolation({ max_tx_data_size: 100 }, 'max_tx_data_size');
    await expectViolation({ max_allowed_fee_lamports: 9_999 }, 'max_allowed_fee_lamports');
    await expectViolation({ min_balance: Number(await rpc.getBalance(relayer.address)) }, 'min_balance');
  });

  it("never lets a request spend the relayer's own funds", async () => {
    const drain = await buildTx(relayer.address as Address, [transferSol(relayer.address as Address, dest.address, SOL)], await latestBlockhash());
    await expectRequestError(prepareSolanaTx({ transaction: drain }, { signer: relayer, rpc }), 'policy.relayer_account', /uses the relayer's account/);
  });

  it('checks token mints of SPL transfers against allowed_tokens', async () => {
    const [mint, other, from, to] = await Promise.all([party(), party(), party(), party()]);
    const transferChecked = (m: Address): Instruction => ({
      programAddress: TOKEN,
      accounts: [
        { address: from.address, role: AccountRole.WRITABLE },
        { address: m, role: AccountRole.READONLY },
        { address: to.address, role: AccountRole.WRITABLE },
        { address: user.address, role: AccountRole.READONLY_SIGNER },
      ],
      data: new Uint8Array([12, 1, 0, 0, 0, 0, 0, 0, 0, 6]),
    });
    const blockhash = await latestBlockhash();
    const policy: SolanaPolicy = { allowed_tokens: [{ mint: mint.address }] };
    const ok = decodeSolanaTx(await buildTx(relayer.address as Address, [transferChecked(mint.address)], blockhash, [user.keyPair]));
    expect(() => checkSolanaPolicy(ok, policy)).not.toThrow();
    const bad = decodeSolanaTx(await buildTx(relayer.address as Address, [transferChecked(other.address)], blockhash, [user.keyPair]));
    expect(() => checkSolanaPolicy(bad, policy)).toThrow(/policy allowed_tokens: instruction 0 transfers token mint/);
  });

  it('validates OpenZeppelin-style policy config', () => {
    const parsed = solanaPolicySchema.parse({
      fee_payment_strategy: 'relayer',
      allowed_programs: [SYSTEM],
      max_signatures: 4,
      max_tx_data_size: 1232,
      max_allowed_fee_lamports: 100_000,
      min_balance: 1_000_000,
      allowed_tokens: [{ mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6, symbol: 'USDC', max_allowed_fee: 100 }],
      swap_config: { strategy: 'jupiter-swap', min_balance_threshold: 1 },
    });
    expect(parsed.allowed_programs).toEqual([SYSTEM]);
    expect(solanaPolicySchema.safeParse({ allowed_accounts: [SYSTEM], disallowed_accounts: [SYSTEM] }).success).toBe(false);
    expect(solanaPolicySchema.safeParse({ allowed_programs: ['not-an-address'] }).success).toBe(false);
    expect(solanaPolicySchema.safeParse({ gas_price_cap: 1 }).success).toBe(false);
  });
});
