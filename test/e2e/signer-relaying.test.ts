// Relayers whose keys stay in a custody, through the whole service on anvil: a real PKCS#11 token
// (SoftHSM), and AWS KMS through its client on a loopback stand-in that can go down.
import { domainSeparator, hashStruct, hashTypedData, recoverAddress, recoverMessageAddress, type Hex } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { getAddressDecoder, type Address, type Blockhash } from '@solana/kit';
import { Keypair, StrKey } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evmConfig, startTestService, type TestService } from '../support/service.js';
import { createToken, SOFTHSM_MODULE, type Token } from '../support/softhsm.js';
import { awsKms } from '../../src/signers/aws-kms/index.js';
import { startAwsKmsStandin, type AwsKmsStandin } from '../support/standins/aws-kms.js';
import { getTx, RECEIVER, RELAYER, rpc, sendOk, waitFor, waitStatus } from '../support/evm.js';
import { buildTx, party, SOL, transferSol } from '../chains/solana/support.js';
import { send, waitForStatus } from '../chains/stellar/support.js';
import { startSolanaRpc } from '../support/solana-rpc.js';
import { startStellarRpc, type StellarRpcStub } from '../support/stellar-rpc.js';

const PASSPHRASE = 'Relayer Test Network ; 2025';

const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as Hex;

async function relayer(svc: TestService) {
  return (await (await svc.request('GET', `/api/v1/relayers/${RELAYER}`)).json()).data;
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Points the AWS client at the stand-in; gives back what restores the environment. */
function awsEnvOf(kms: AwsKmsStandin): () => void {
  const env = { AWS_ENDPOINT_URL_KMS: kms.url, AWS_ACCESS_KEY_ID: kms.accessKeyId, AWS_SECRET_ACCESS_KEY: kms.secretAccessKey, AWS_REGION: kms.region };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

/**
 * A Solana and a Stellar chain on which an Ed25519 key's accounts (and `user`'s, `dest`'s) are
 * funded, and the config of relayers `sol` and `xlm` on `signer`.
 */
async function startEd25519Chains(publicKey: Uint8Array, user: Address, dest: string, blockhashLifetime: number) {
  const solana = await startSolanaRpc({
    airdrops: [
      { address: getAddressDecoder().decode(publicKey), lamports: 10n * SOL },
      { address: user, lamports: SOL },
    ],
    slotMs: 100,
    blockhashLifetime,
    finalizedAfter: 6,
  });
  const stellar = await startStellarRpc({
    networkPassphrase: PASSPHRASE,
    ledgerIntervalMs: 100,
    accounts: [
      { address: StrKey.encodeEd25519PublicKey(Buffer.from(publicKey)), balance: 1_000n * 10_000_000n, sequence: 50_000_000n << 32n },
      { address: dest, balance: 10n * 10_000_000n, sequence: 9_000n },
    ],
  });
  const relayer = (id: string, network: string, type: string, signerId: string) => ({
    id,
    name: id,
    network,
    network_type: type,
    paused: false,
    signer_id: signerId,
    policies: {},
  });
  return {
    solana,
    stellar,
    config: (signer: { id: string; type: string; config: object }) => ({
      relayers: [relayer('sol', 'solana-local', 'solana', signer.id), relayer('xlm', 'stellar-local', 'stellar', signer.id)],
      signers: [signer],
      notifications: [],
      networks: [
        { type: 'solana', network: 'solana-local', rpc_urls: [solana.url], average_blocktime_ms: 50, is_testnet: true },
        { type: 'stellar', network: 'stellar-local', rpc_urls: [stellar.url], passphrase: PASSPHRASE, average_blocktime_ms: 100, is_testnet: true },
      ],
    }),
  };
}

describe('a relayer whose key is on a PKCS#11 token', () => {
  let token: Token;
  let svc: TestService;
  let address: Hex;

  beforeAll(async () => {
    token = createToken({ label: 'relaying', pin: '246810' });
    const key = token.addKey('secp256k1', 'evm-key');
    address = publicKeyToAddress(hex(key.publicKey));
    process.env.HSM_PIN = token.pin;
    svc = await startTestService({
      anvil: true,
      config: ({ rpcUrl }) => ({
        ...evmConfig(rpcUrl, { relayer: { signer_id: 'hsm' } }),
        signers: [
          {
            id: 'hsm',
            type: 'pkcs11',
            config: { module_path: SOFTHSM_MODULE, token_label: token.label, pin: { type: 'env', value: 'HSM_PIN' }, key_label: 'evm-key' },
          },
        ],
      }),
    });
    await rpc(svc.anvil!.url, 'anvil_setBalance', [address, '0x56bc75e2d63100000']);
  });
  afterAll(async () => {
    await svc?.stop();
    token?.cleanup();
    delete process.env.HSM_PIN;
  });

  it("takes the token key's address and relays transactions signed on the token", async () => {
    expect((await relayer(svc)).address).toBe(address);
    const ids = await Promise.all([1, 2, 3].map(() => sendOk(svc).then((t) => t.id)));
    for (const id of ids) await waitStatus(svc, id, 'confirmed');
    const mined = await Promise.all(ids.map(async (id) => rpc(svc.anvil!.url, 'eth_getTransactionByHash', [(await getTx(svc, id)).hash])));
    expect(mined.map((t) => t.from.toLowerCase())).toEqual([address.toLowerCase(), address.toLowerCase(), address.toLowerCase()]);
    expect(mined.map((t) => Number(t.nonce)).sort()).toEqual([0, 1, 2]);
  });

  it('signs messages and typed data that recover to the relayer', async () => {
    const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/sign`, { message: 'hello from the token' });
    const signed = await res.json();
    expect(signed.error ?? null).toBeNull();
    const { sig } = signed.data;
    expect(await recoverMessageAddress({ message: 'hello from the token', signature: `0x${sig.replace(/^0x/, '')}` as Hex })).toBe(address);

    const domain = { name: 'Relay', version: '1', chainId: 31337 };
    const types = { Note: [{ name: 'text', type: 'string' }] };
    const typed = await svc.request('POST', `/api/v1/relayers/${RELAYER}/sign-typed-data`, {
      domain_separator: domainSeparator({ domain }),
      hash_struct_message: hashStruct({ data: { text: 'hi' }, primaryType: 'Note', types }),
    });
    const typedHash = hashTypedData({ domain, types, primaryType: 'Note', message: { text: 'hi' } });
    const typedBody = await typed.json();
    expect(typedBody.error ?? null).toBeNull();
    const t = typedBody.data;
    expect(await recoverAddress({ hash: typedHash, signature: `0x${t.sig.replace(/^0x/, '')}` as Hex })).toBe(address);
  });
});

describe("Solana and Stellar relayers on the token's Ed25519 key", () => {
  let token: Token;
  let svc: TestService;
  let solana: Awaited<ReturnType<typeof startSolanaRpc>>;
  let stellar: StellarRpcStub;
  let solanaAddress: Address;
  let stellarAddress: string;
  const dest = Keypair.random();
  let user: Awaited<ReturnType<typeof party>>;

  beforeAll(async () => {
    token = createToken({ label: 'edwards', pin: '975310' });
    const key = token.addKey('ed25519', 'ed-key');
    solanaAddress = getAddressDecoder().decode(key.publicKey) as Address;
    stellarAddress = StrKey.encodeEd25519PublicKey(Buffer.from(key.publicKey));
    user = await party();
    const chains = await startEd25519Chains(key.publicKey, user.address, dest.publicKey(), 3_000);
    ({ solana, stellar } = chains);
    process.env.ED_PIN = token.pin;
    const signer = {
      id: 'ed-hsm',
      type: 'pkcs11',
      config: { module_path: SOFTHSM_MODULE, token_label: token.label, pin: { type: 'env', value: 'ED_PIN' }, key_label: 'ed-key' },
    };
    svc = await startTestService({ config: () => chains.config(signer) });
  });
  afterAll(async () => {
    await svc?.stop();
    await solana?.stop();
    await stellar?.stop();
    token?.cleanup();
    delete process.env.ED_PIN;
  });

  it('relays a Solana transfer paid and signed by the token key', async () => {
    const blockhash = solana.svm.latestBlockhash() as Blockhash;
    const wire = await buildTx(solanaAddress, [transferSol(user.address, (await party()).address, SOL / 10n)], blockhash, [user.keyPair]);
    const r = await send(svc, 'sol', { transaction: wire });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data.from).toBe(solanaAddress);
    const done = await waitForStatus(svc, 'sol', r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
  });

  it('relays a Stellar payment signed by the token key', async () => {
    const before = stellar.account(dest.publicKey())!.balance;
    const r = await send(svc, 'xlm', {
      network: 'stellar-local',
      operations: [{ type: 'payment', destination: dest.publicKey(), amount: 5_000_000, asset: { type: 'native' } }],
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data.from).toBe(stellarAddress);
    const done = await waitForStatus(svc, 'xlm', r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(stellar.account(dest.publicKey())!.balance).toBe(before + 5_000_000n);
  });
});

describe('a relayer on AWS KMS, while KMS is away and back', () => {
  let kms: AwsKmsStandin;
  let svc: TestService;
  let restoreEnv: (() => void) | undefined;

  beforeAll(async () => {
    kms = await startAwsKmsStandin();
    const { keyId } = kms.createKey('ECC_SECG_P256K1');
    restoreEnv = awsEnvOf(kms);
    kms.setDown(true);
    svc = await startTestService({
      anvil: true,
      env: { SIGNER_TIMEOUT_MS: '2000' },
      config: ({ rpcUrl }) => ({
        ...evmConfig(rpcUrl, { relayer: { signer_id: 'kms' } }),
        signers: [{ id: 'kms', type: 'aws_kms', config: { region: kms.region, key_id: keyId } }],
      }),
    });
  });
  afterAll(async () => {
    await svc?.stop();
    await kms?.stop();
    restoreEnv?.();
  });

  it('is disabled while KMS does not answer at start-up, and enabled with its address once it does', async () => {
    const down = await until(
      () => relayer(svc),
      (r) => r.system_disabled === true,
    );
    expect(down.system_disabled).toBe(true);
    expect(down.disabled_reason?.type ?? down.disabled_reason).toMatch(/SignerUnavailable/);
    kms.setDown(false);
    const up = await until(
      () => relayer(svc),
      (r) => r.system_disabled === false && /^0x[0-9a-fA-F]{40}$/.test(r.address),
    );
    expect(up.system_disabled).toBe(false);
    await rpc(svc.anvil!.url, 'anvil_setBalance', [up.address, '0x56bc75e2d63100000']);
    const tx = await sendOk(svc);
    await waitStatus(svc, tx.id, 'confirmed');
  });

  it('keeps a transaction in its place with the reason while KMS is down, and sends it once when KMS is back', async () => {
    kms.setDown(true);
    const tx = await sendOk(svc, { to: RECEIVER, value: '7' });
    const waiting = await waitFor(svc, tx.id, (t) => /signer "kms" \(aws_kms\)/.test(t.statusReason ?? ''));
    expect(waiting.status).toBe('pending');
    expect(waiting.statusReason).not.toContain(kms.secretAccessKey);
    // Signing without sending answers at once, in the envelope, with the same reason.
    const refused = await svc.request('POST', `/api/v1/relayers/${RELAYER}/sign`, { message: 'now?' });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatch(/signer "kms" \(aws_kms\)/);
    kms.setDown(false);
    const done = await waitStatus(svc, tx.id, 'confirmed');
    const onChain = await rpc(svc.anvil!.url, 'eth_getTransactionByHash', [done.hash]);
    expect(Number(onChain.nonce)).toBe(1);
    const metrics = await svc.rt.metrics.registry.getSingleMetricAsString('relayer_signer_calls_total');
    expect(metrics).toMatch(/signer_type="aws_kms",operation="sign",outcome="ok"/);
    expect(metrics).toMatch(/signer_type="aws_kms",operation="sign",outcome="unavailable"/);
  });

  it('creates an aws_kms signer through the API after reading its key, and never returns a secret', async () => {
    const { keyId } = kms.createKey('ECC_SECG_P256K1');
    const res = await svc.request('POST', '/api/v1/signers', { id: 'kms-2', type: 'aws_kms', config: { region: kms.region, key_id: keyId } });
    expect(res.status).toBe(201);
    expect((await res.json()).data).toEqual({ id: 'kms-2', type: 'aws_kms', config: { region: kms.region, key_id: keyId }, source: 'api' });
    const missing = await svc.request('POST', '/api/v1/signers', { id: 'kms-3', type: 'aws_kms', config: { region: kms.region, key_id: 'no-such-key' } });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toMatch(/no-such-key|not found/i);
    const wrong = await svc.request('POST', '/api/v1/signers', { id: 'kms-4', type: 'aws_kms', config: { region: kms.region } });
    expect(wrong.status).toBe(400);
    expect((await (await svc.request('GET', '/api/v1/signers/kms-3')).json()).success).toBe(false);
  });
});

describe('Solana and Stellar relayers on an AWS KMS Ed25519 key, while KMS is away and back', () => {
  let kms: AwsKmsStandin;
  let svc: TestService;
  let solana: Awaited<ReturnType<typeof startSolanaRpc>>;
  let stellar: StellarRpcStub;
  let user: Awaited<ReturnType<typeof party>>;
  const dest = Keypair.random();
  let restoreEnv: (() => void) | undefined;

  beforeAll(async () => {
    kms = await startAwsKmsStandin();
    const { keyId } = kms.createKey('ECC_NIST_EDWARDS25519');
    restoreEnv = awsEnvOf(kms);
    const config = awsKms.config.parse({ region: kms.region, key_id: keyId });
    const custody = await awsKms.open(config, { id: 'kms-ed', curve: 'ed25519', baseDir: process.cwd(), secret: () => '' });
    const publicKey = await custody.publicKey(AbortSignal.timeout(5_000));
    user = await party();
    const chains = await startEd25519Chains(publicKey, user.address, dest.publicKey(), 60_000);
    ({ solana, stellar } = chains);
    svc = await startTestService({
      env: { SIGNER_TIMEOUT_MS: '2000' },
      config: () => chains.config({ id: 'kms-ed', type: 'aws_kms', config: { region: kms.region, key_id: keyId } }),
    });
  });
  afterAll(async () => {
    await svc?.stop();
    await solana?.stop();
    await stellar?.stop();
    await kms?.stop();
    restoreEnv?.();
  });

  it('accepts sends while KMS is down, says why they wait, and relays them once it is back', async () => {
    kms.setDown(true);
    const blockhash = solana.svm.latestBlockhash() as Blockhash;
    const wire = await buildTx((await relayerOf(svc, 'sol')).address, [transferSol(user.address, (await party()).address, SOL / 10n)], blockhash, [
      user.keyPair,
    ]);
    const sol = await send(svc, 'sol', { transaction: wire });
    expect(sol.status, JSON.stringify(sol.json)).toBe(200);
    const xlm = await send(svc, 'xlm', {
      network: 'stellar-local',
      operations: [{ type: 'payment', destination: dest.publicKey(), amount: 5_000_000, asset: { type: 'native' } }],
    });
    expect(xlm.status, JSON.stringify(xlm.json)).toBe(200);
    for (const [relayerId, id] of [
      ['sol', sol.json.data.id],
      ['xlm', xlm.json.data.id],
    ] as const) {
      const waiting = await until(
        async () => (await (await svc.request('GET', `/api/v1/relayers/${relayerId}/transactions/${id}`)).json()).data,
        (t) => /signer "kms-ed" \(aws_kms\)/.test(t.status_reason ?? ''),
        20_000,
      );
      expect(waiting.status, relayerId).toBe('pending');
      expect(waiting.status_reason).toMatch(/could not be signed: signer "kms-ed" \(aws_kms\)/);
    }
    kms.setDown(false);
    for (const [relayerId, id] of [
      ['sol', sol.json.data.id],
      ['xlm', xlm.json.data.id],
    ] as const) {
      const done = await waitForStatus(svc, relayerId, id, ['confirmed', 'failed', 'expired'], 30_000);
      expect(done.status, `${relayerId}: ${done.status_reason}`).toBe('confirmed');
      expect(done.status_reason ?? null).toBeNull();
    }
  });
});

async function relayerOf(svc: TestService, id: string) {
  return (await (await svc.request('GET', `/api/v1/relayers/${id}`)).json()).data;
}
