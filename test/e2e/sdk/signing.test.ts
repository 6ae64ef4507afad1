// Signing without sending, through OpenZeppelin Relayer's own client: every signature is checked
// with the chain's own library (viem, @solana/kit, @stellar/stellar-sdk), never against a value
// this service computed.
import { createHash } from 'node:crypto';
import { getBase58Encoder, getPublicKeyFromAddress, getTransactionDecoder, verifySignature, type Address, type SignatureBytes } from '@solana/kit';
import { Account, Asset, Keypair, Operation, type Transaction, TransactionBuilder } from '@stellar/stellar-sdk';
import { createPublicClient, domainSeparator, hashStruct, http, verifyMessage, verifyTypedData, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbState, SOLANA_RELAYER, STELLAR_RELAYER, startRestService } from '../../support/rest.js';
import { buildTx, NO_BLOCKHASH, party, transferSol } from '../../chains/solana/support.js';
import { DEV_ADDRESS, type TestService } from '../../support/service.js';
import { sdkClient, sdkError, type Client } from '../../support/sdk.js';

const PASSPHRASE = 'Test SDF Network ; September 2015';

/** The REST test service (every answer checked against the OpenAPI document) on anvil. */
const signingService = (db: 'pglite' | 'postgres' = 'pglite') => startRestService({ db, anvil: true });

// An EIP-712 document as a wallet would sign it.
const domain = { name: 'Ether Mail', version: '1', chainId: 31337, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' } as const;
const types = {
  Person: [
    { name: 'name', type: 'string' },
    { name: 'wallet', type: 'address' },
  ],
  Mail: [
    { name: 'from', type: 'Person' },
    { name: 'to', type: 'Person' },
    { name: 'contents', type: 'string' },
  ],
} as const;
const mail = {
  from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
  to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
  contents: 'Hello, Bob!',
} as const;

describe('signing without sending, through @openzeppelin/relayer-sdk', () => {
  let svc: TestService;
  let client: Client;
  let solanaAddress: string;
  let stellarAddress: string;

  beforeAll(async () => {
    svc = await signingService();
    client = await sdkClient(svc);
    solanaAddress = (await client.relayers.getRelayer(SOLANA_RELAYER)).data.data!.address!;
    stellarAddress = (await client.relayers.getRelayer(STELLAR_RELAYER)).data.data!.address!;
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await svc?.stop();
  });

  it('signs an EIP-191 message that viem verifies for the relayer address, and sends nothing', async () => {
    const chain = createPublicClient({ transport: http(svc.anvil!.url) });
    const blockBefore = await chain.getBlockNumber();
    const res = await client.relayers.sign('evm-relayer', { message: 'hello relayer ✓' });
    expect(res.status).toBe(200);
    const d = res.data.data as { r: string; s: string; v: number; sig: string };
    expect(d).toEqual({
      r: expect.stringMatching(/^[0-9a-f]{64}$/),
      s: expect.stringMatching(/^[0-9a-f]{64}$/),
      v: expect.any(Number),
      sig: expect.stringMatching(/^[0-9a-f]{130}$/),
    });
    expect([27, 28]).toContain(d.v);
    expect(d.sig).toBe(`${d.r}${d.s}${d.v.toString(16)}`);
    expect(await verifyMessage({ address: DEV_ADDRESS, message: 'hello relayer ✓', signature: `0x${d.sig}` })).toBe(true);
    expect(await verifyMessage({ address: DEV_ADDRESS, message: 'hello relayer', signature: `0x${d.sig}` })).toBe(false);
    expect(await chain.getBlockNumber()).toBe(blockBefore);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(0);
  });

  it('signs EIP-712 typed data given as domain separator and struct hash: viem verifies it against the full document', async () => {
    const res = await client.relayers.signTypedData('evm-relayer', {
      domain_separator: domainSeparator({ domain }),
      hash_struct_message: hashStruct({ data: mail, primaryType: 'Mail', types }).slice(2),
    });
    const d = res.data.data as { sig: string };
    const ok = await verifyTypedData({ address: DEV_ADDRESS, domain, types, primaryType: 'Mail', message: mail, signature: `0x${d.sig}` as Hex });
    expect(ok).toBe(true);
    const other = await verifyTypedData({
      address: DEV_ADDRESS,
      domain,
      types,
      primaryType: 'Mail',
      message: { ...mail, contents: 'Hi' },
      signature: `0x${d.sig}` as Hex,
    });
    expect(other).toBe(false);
  });

  it('signs a Solana message: @solana/kit verifies the ed25519 signature with the relayer address', async () => {
    const res = await client.relayers.sign(SOLANA_RELAYER, { message: 'gm solana' });
    const d = res.data.data as { signature: string; public_key: string };
    expect(d.public_key).toBe(solanaAddress);
    const key = await getPublicKeyFromAddress(d.public_key as Address);
    const sig = getBase58Encoder().encode(d.signature) as SignatureBytes;
    expect(await verifySignature(key, sig, new TextEncoder().encode('gm solana'))).toBe(true);
    expect(await verifySignature(key, sig, new TextEncoder().encode('gm solana!'))).toBe(false);
  });

  it('signs a Stellar message (SEP-53): stellar-sdk verifies it with the relayer key', async () => {
    const res = await client.relayers.sign(STELLAR_RELAYER, { message: 'gm stellar' });
    const d = res.data.data as { signature: string; public_key: string };
    expect(d.public_key).toBe(stellarAddress);
    const digest = (m: string) => createHash('sha256').update(`Stellar Signed Message:\n${m}`).digest();
    const kp = Keypair.fromPublicKey(d.public_key);
    expect(kp.verify(digest('gm stellar'), Buffer.from(d.signature, 'base64'))).toBe(true);
    expect(kp.verify(digest('gm stellar?'), Buffer.from(d.signature, 'base64'))).toBe(false);
  });

  it('signs a Solana transaction as its fee payer without sending it, keeping the other signature', async () => {
    const user = await party();
    const other = await party();
    const wire = await buildTx(solanaAddress as Address, [transferSol(user.address, other.address, 5n)], NO_BLOCKHASH, [user.keyPair]);
    const res = await client.relayers.signTransaction(SOLANA_RELAYER, { transaction: wire });
    const d = res.data.data as { transaction: string; signature: string };
    const tx = getTransactionDecoder().decode(Buffer.from(d.transaction, 'base64'));
    const relayerSig = tx.signatures[solanaAddress as Address]!;
    expect(relayerSig).not.toBeNull();
    expect(Buffer.from(relayerSig).equals(Buffer.from(getBase58Encoder().encode(d.signature)))).toBe(true);
    expect(await verifySignature(await getPublicKeyFromAddress(solanaAddress as Address), relayerSig, tx.messageBytes)).toBe(true);
    // The user's own signature is still there and still valid for the unchanged message.
    expect(await verifySignature(user.keyPair.publicKey, tx.signatures[user.address]!, tx.messageBytes)).toBe(true);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(0);
  });

  it('refuses a Solana transaction whose fee payer is not the relayer (400 naming the field)', async () => {
    const user = await party();
    const wire = await buildTx(user.address, [transferSol(user.address, user.address, 1n)], NO_BLOCKHASH);
    const { status, body } = await sdkError(client.relayers.signTransaction(SOLANA_RELAYER, { transaction: wire }));
    expect({ status, message: body.message }).toEqual({ status: 400, message: 'Bad Request' });
    expect(body.error).toMatch(/^transaction: fee payer must be the relayer/);
    // The relayer's policy applies as for a send: by default it only pays fees.
    const spend = await buildTx(solanaAddress as Address, [transferSol(solanaAddress as Address, user.address, 1n)], NO_BLOCKHASH);
    const refused = await sdkError(client.relayers.signTransaction(SOLANA_RELAYER, { transaction: spend }));
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 400, error: expect.stringMatching(/relayer_account/) });
  });

  it('signs a Stellar transaction envelope without submitting it: stellar-sdk verifies the signature over its hash', async () => {
    const unsigned = new TransactionBuilder(new Account(stellarAddress, '41'), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: Keypair.random().publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(300)
      .build()
      .toXDR();
    const res = await client.relayers.signTransaction(STELLAR_RELAYER, { unsigned_xdr: unsigned });
    const d = res.data.data as { signedXdr: string; signature: string };
    const tx = TransactionBuilder.fromXDR(d.signedXdr, PASSPHRASE);
    expect(tx.signatures).toHaveLength(1);
    expect(tx.signatures[0].signature().toString('base64')).toBe(d.signature);
    expect(Keypair.fromPublicKey(stellarAddress).verify(tx.hash(), Buffer.from(d.signature, 'base64'))).toBe(true);
    expect((tx as Transaction).sequence).toBe('42');
  });

  it('answers each operation a family does not have with a 400 that says so', async () => {
    const cases: [() => Promise<unknown>, RegExp][] = [
      [
        () => client.relayers.signTypedData(SOLANA_RELAYER, { domain_separator: '00'.repeat(32), hash_struct_message: '11'.repeat(32) }),
        /signing typed data is not supported for Solana relayers/,
      ],
      [
        () => client.relayers.signTypedData(STELLAR_RELAYER, { domain_separator: '00'.repeat(32), hash_struct_message: '11'.repeat(32) }),
        /not supported for Stellar relayers/,
      ],
      [
        () => client.relayers.signTransaction('evm-relayer', { unsigned_xdr: 'AAAA' }),
        /signing a transaction without sending it is not supported for EVM relayers/,
      ],
      [
        () => client.relayers.signTransaction(STELLAR_RELAYER, { transaction: 'AAAA' }),
        /^transaction: Solana relayers take it; Stellar relayers take unsigned_xdr/,
      ],
      [() => client.relayers.signTransaction(STELLAR_RELAYER, {} as never), /^unsigned_xdr: required/],
      [() => client.relayers.signTransaction(SOLANA_RELAYER, { unsigned_xdr: 'AAAA' }), /^unsigned_xdr: Stellar relayers take it/],
      [() => client.relayers.signTransaction(SOLANA_RELAYER, { transaction: 'not base64!' }), /^transaction: must be a base64 string/],
      [() => client.relayers.signTransaction(STELLAR_RELAYER, { unsigned_xdr: 'bm90IHhkcg==' }), /^unsigned_xdr: is not a base64 Stellar transaction envelope/],
    ];
    for (const [call, error] of cases) {
      const { status, body } = await sdkError(call());
      expect({ status, message: body.message }).toEqual({ status: 400, message: 'Bad Request' });
      expect(body.error).toMatch(error);
    }
  });

  it('a paused or system-disabled relayer signs nothing', async () => {
    await client.relayers.updateRelayer('evm-relayer', { paused: true });
    for (const call of [
      () => client.relayers.sign('evm-relayer', { message: 'x' }),
      () => client.relayers.signTypedData('evm-relayer', { domain_separator: '00'.repeat(32), hash_struct_message: '11'.repeat(32) }),
    ]) {
      const { status, body } = await sdkError(call());
      expect({ status, message: body.message, error: body.error }).toEqual({ status: 400, message: 'Bad Request', error: 'relayer evm-relayer is paused' });
    }
    await client.relayers.updateRelayer('evm-relayer', { paused: false });
    expect((await client.relayers.sign('evm-relayer', { message: 'x' })).status).toBe(200);

    await svc.rt.db.prisma.relayer.update({
      where: { id: STELLAR_RELAYER },
      data: { systemDisabled: true, disabledReason: { type: 'RpcValidationFailed', details: 'no RPC answered' } },
    });
    const before = await dbState(svc.rt);
    const { status, body } = await sdkError(client.relayers.sign(STELLAR_RELAYER, { message: 'x' }));
    expect({ status, error: body.error }).toEqual({ status: 400, error: `relayer ${STELLAR_RELAYER} is disabled: no RPC answered` });
    expect(await dbState(svc.rt)).toBe(before);
    await svc.rt.db.prisma.relayer.update({ where: { id: STELLAR_RELAYER }, data: { systemDisabled: false, disabledReason: undefined } });
  });

  it('the same operations through GraphQL, on the same resolvers', async () => {
    const res = await svc.gql(
      `mutation($m: String!) { signMessage(relayerId: "evm-relayer", input: { message: $m }) { __typename ... on EvmSignature { sig v } } }`,
      { m: 'via graphql' },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.signMessage.__typename).toBe('EvmSignature');
    expect(await verifyMessage({ address: DEV_ADDRESS, message: 'via graphql', signature: `0x${res.data.signMessage.sig}` })).toBe(true);
    const sol = await svc.gql(`mutation { signMessage(relayerId: "${SOLANA_RELAYER}", input: { message: "m" }) { ... on Ed25519Signature { publicKey } } }`);
    expect(sol.data.signMessage.publicKey).toBe(solanaAddress);
  });
});
