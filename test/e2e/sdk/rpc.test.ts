// The JSON-RPC passthrough through OpenZeppelin Relayer's own client: single calls and batches to
// anvil and to the Solana and Stellar stand-ins, refused methods, and failover over the relayer's
// RPC URLs.
import { createPublicClient, createWalletClient, http, parseEther } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { address, lamports, type Blockhash } from '@solana/kit';
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTx, party, SOL, transferSol } from '../../chains/solana/support.js';
import { SOLANA_RELAYER, STELLAR_RELAYER } from '../../support/rest.js';
import { startSolanaRpc, type SolanaRpcStub } from '../../support/solana-rpc.js';
import { startStellarRpc, type StellarRpcStub } from '../../support/stellar-rpc.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../../support/service.js';
import { sdkClient, sdkError, type Client } from '../../support/sdk.js';

const PASSPHRASE = 'Test SDF Network ; September 2015';
/** anvil's dev account #1: a client with its own key. */
const CLIENT_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const DEAD = 'http://127.0.0.1:1';

type Answer = { jsonrpc: string; id: unknown; result?: any; error?: { code: number; message: string; description: string; data?: unknown } };

describe('JSON-RPC passthrough through @openzeppelin/relayer-sdk', () => {
  let svc: TestService;
  let client: Client;
  let solana: SolanaRpcStub;
  let stellar: StellarRpcStub;
  let solanaAddress: string;

  beforeAll(async () => {
    // The Solana and Stellar relayers use the dev key; their addresses are known once the service derived them.
    solana = await startSolanaRpc({ airdrops: [], slotMs: 0 });
    stellar = await startStellarRpc({ networkPassphrase: PASSPHRASE, accounts: [], ledgerIntervalMs: 0 });
    svc = await startTestService({
      anvil: true,
      workers: false,
      config: ({ rpcUrl }) => {
        const c = evmConfig(rpcUrl);
        return {
          ...c,
          relayers: [
            ...c.relayers,
            // Its first URL never answers: every call fails over to anvil.
            {
              id: 'failover-relayer',
              name: 'Failover',
              network: 'localnet',
              network_type: 'evm',
              signer_id: 'dev-signer',
              custom_rpc_urls: [
                { url: DEAD, weight: 100 },
                { url: rpcUrl, weight: 1 },
              ],
            },
            {
              id: 'dead-relayer',
              name: 'Dead',
              network: 'localnet',
              network_type: 'evm',
              signer_id: 'dev-signer',
              custom_rpc_urls: [{ url: DEAD, weight: 100 }],
            },
            { id: SOLANA_RELAYER, name: 'Solana relayer', network: 'devnet', network_type: 'solana', signer_id: 'dev-signer', policies: {} },
            { id: STELLAR_RELAYER, name: 'Stellar relayer', network: 'testnet', network_type: 'stellar', signer_id: 'dev-signer', policies: {} },
          ],
          networks: [
            ...c.networks,
            { type: 'solana', network: 'devnet', rpc_urls: [solana.url], is_testnet: true },
            { type: 'stellar', network: 'testnet', rpc_urls: [stellar.url], passphrase: PASSPHRASE, is_testnet: true },
          ],
        };
      },
    });
    client = await sdkClient(svc);
    solanaAddress = (await client.relayers.getRelayer(SOLANA_RELAYER)).data.data!.address!;
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await svc?.stop();
    await solana?.stop();
    await stellar?.stop();
  });

  const rpc = async (relayerId: string, body: unknown) => {
    const res = await client.relayers.rpc(relayerId, body as never);
    expect(res.status).toBe(200);
    return res.data as unknown as Answer | Answer[];
  };

  it('forwards a single call to anvil and answers the JSON-RPC response itself, with the caller id', async () => {
    expect(await rpc('evm-relayer', { jsonrpc: '2.0', id: 7, method: 'eth_chainId', params: [] })).toEqual({ jsonrpc: '2.0', id: 7, result: '0x7a69' });
    // As the reference: an absent id is 1, absent params are [].
    expect(await rpc('evm-relayer', { jsonrpc: '2.0', method: 'eth_chainId' })).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' });
    const balance = (await rpc('evm-relayer', { jsonrpc: '2.0', id: 'b', method: 'eth_getBalance', params: [DEV_ADDRESS, 'latest'] })) as Answer;
    const chain = createPublicClient({ transport: http(svc.anvil!.url) });
    expect(BigInt(balance.result)).toBe(await chain.getBalance({ address: DEV_ADDRESS }));
  });

  it('answers a batch in order: forwarded calls, refused methods and malformed calls each in their place', async () => {
    const answers = (await rpc('evm-relayer', [
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_sign', params: [DEV_ADDRESS, '0xdeadbeef'] },
      { jsonrpc: '2.0', id: 3, params: [] },
      { jsonrpc: '2.0', id: 4, method: 'eth_getBalance', params: ['not an address', 'latest'] },
      { jsonrpc: '2.0', id: 5, method: 'net_version', params: [] },
    ])) as Answer[];
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3, 4, 5]);
    expect(answers[0].result).toMatch(/^0x[0-9a-f]+$/);
    expect(answers[1].error).toMatchObject({
      code: -32601,
      message: 'Method not allowed',
      description: expect.stringMatching(/^eth_sign is refused: it would sign/),
    });
    expect(answers[2].error).toMatchObject({ code: -32600, message: 'Invalid request', description: 'method: required' });
    // The node's own verdict on a bad call comes back as that call's error.
    expect(answers[3].error?.code).toBeLessThan(0);
    expect(answers[3].result).toBeUndefined();
    expect(answers[4].result).toBe('31337');
  });

  it('refuses every method that would sign, spend or use keys on the node, or administer it, and the node is untouched', async () => {
    const chain = createPublicClient({ transport: http(svc.anvil!.url) });
    const before = await chain.getBalance({ address: RECEIVER });
    const refused = [
      ['eth_sendTransaction', [{ from: DEV_ADDRESS, to: RECEIVER, value: '0x1' }], /would sign with or reveal keys/],
      ['eth_signTransaction', [{ from: DEV_ADDRESS, to: RECEIVER }], /would sign/],
      ['eth_signTypedData_v4', [DEV_ADDRESS, '{}'], /would sign/],
      ['personal_sign', ['0xdead', DEV_ADDRESS], /would sign/],
      ['personal_unlockAccount', [DEV_ADDRESS, 'x'], /would sign/],
      ['eth_accounts', [], /reveal keys/],
      ['wallet_addEthereumChain', [{}], /would sign/],
      ['anvil_setBalance', [RECEIVER, '0xffffffffffff'], /administers the node/],
      ['hardhat_impersonateAccount', [RECEIVER], /administers the node/],
      ['evm_mine', [], /administers the node/],
      ['debug_traceTransaction', ['0x00'], /administers the node/],
      ['admin_peers', [], /administers the node/],
      ['miner_start', [], /administers the node/],
      ['eth_newFilter', [{}], /not offered by the passthrough/],
    ] as const;
    const answers = (await rpc(
      'evm-relayer',
      refused.map(([method, params], i) => ({ jsonrpc: '2.0', id: i, method, params })),
    )) as Answer[];
    refused.forEach(([method, , why], i) => {
      expect(answers[i], method).toMatchObject({ id: i, error: { code: -32601, message: 'Method not allowed', description: expect.stringMatching(why) } });
    });
    expect(await chain.getBalance({ address: RECEIVER })).toBe(before);
    // A single refused call is a JSON-RPC error too (HTTP 200), as the node would answer it.
    expect(await rpc('evm-relayer', { jsonrpc: '2.0', id: 9, method: 'eth_sendTransaction', params: [] })).toMatchObject({ id: 9, error: { code: -32601 } });
  });

  it("forwards eth_sendRawTransaction of a client's own signed transaction; the relayer's nonce space is untouched", async () => {
    const account = privateKeyToAccount(CLIENT_KEY);
    const chain = createPublicClient({ chain: foundry, transport: http(svc.anvil!.url) });
    const wallet = createWalletClient({ account, chain: foundry, transport: http(svc.anvil!.url) });
    const request = await wallet.prepareTransactionRequest({ to: RECEIVER, value: parseEther('0.001') });
    const raw = await wallet.signTransaction(request);
    const relayerNonce = await chain.getTransactionCount({ address: DEV_ADDRESS });
    const answer = (await rpc('evm-relayer', { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] })) as Answer;
    expect(answer.result).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await chain.waitForTransactionReceipt({ hash: answer.result });
    expect(receipt.from.toLowerCase()).toBe(account.address.toLowerCase());
    expect(await chain.getTransactionCount({ address: DEV_ADDRESS })).toBe(relayerNonce);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(0);
  });

  it("fails over to the relayer's next RPC URL, and answers -33002 when none answers", async () => {
    for (let i = 0; i < 4; i++) {
      expect(await rpc('failover-relayer', { jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] })).toEqual({ jsonrpc: '2.0', id: i, result: '0x7a69' });
    }
    const dead = (await rpc('dead-relayer', [
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_sign', params: [] },
    ])) as Answer[];
    expect(dead[0]).toMatchObject({ id: 1, error: { code: -33002 } });
    expect(dead[0].error!.description).not.toContain('127.0.0.1');
    expect(dead[1]).toMatchObject({ id: 2, error: { code: -32601 } });
  });

  it('forwards Solana node reads to the stand-in, plain or wrapped as the reference client does; refuses signing methods', async () => {
    const plain = (await rpc(SOLANA_RELAYER, { jsonrpc: '2.0', id: 1, method: 'getBalance', params: [solanaAddress] })) as Answer;
    expect(plain.result).toMatchObject({ value: 0 });
    const wrapped = (await rpc(SOLANA_RELAYER, {
      jsonrpc: '2.0',
      id: 2,
      method: 'rawRpcRequest',
      params: { method: 'getLatestBlockhash', params: [] },
    })) as Answer;
    expect(wrapped.result.value.blockhash).toEqual(expect.any(String));
    const refused = (await rpc(SOLANA_RELAYER, [
      { jsonrpc: '2.0', id: 1, method: 'signTransaction', params: { transaction: 'AA' } },
      { jsonrpc: '2.0', id: 2, method: 'signAndSendTransaction', params: { transaction: 'AA' } },
      { jsonrpc: '2.0', id: 3, method: 'requestAirdrop', params: [solanaAddress, 1] },
      { jsonrpc: '2.0', id: 4, method: 'feeEstimate', params: {} },
    ])) as Answer[];
    expect(refused.map((a) => a.error?.code)).toEqual([-32601, -32601, -32601, -32601]);
    expect(refused[0].error!.description).toMatch(/sign-transaction/);
    expect(refused[3].error!.description).toMatch(/gasless/);
    expect(solana.calls).not.toContain('requestAirdrop');
  });

  it('forwards Stellar RPC reads to the stand-in and refuses others', async () => {
    expect(await rpc(STELLAR_RELAYER, { jsonrpc: '2.0', id: 1, method: 'getNetwork' })).toMatchObject({ id: 1, result: { passphrase: PASSPHRASE } });
    const batch = (await rpc(STELLAR_RELAYER, [
      { jsonrpc: '2.0', id: 'a', method: 'getLatestLedger', params: {} },
      { jsonrpc: '2.0', id: 'b', method: 'getAccount', params: {} },
    ])) as Answer[];
    expect(batch[0].result.sequence).toBe(stellar.ledger().sequence);
    expect(batch[1].error).toMatchObject({ code: -32601, message: 'Method not allowed' });
  });

  it('a transaction signed by sign-transaction lands when the client sends it through the passthrough (Solana, Stellar)', async () => {
    // Solana: the relayer pays the fee of a user's transfer; LiteSVM checks every signature.
    solana.svm.airdrop(address(solanaAddress), lamports(10n * SOL));
    const user = await party();
    const to = await party();
    solana.svm.airdrop(user.address, lamports(SOL));
    const blockhash = ((await rpc(SOLANA_RELAYER, { method: 'getLatestBlockhash', params: [] })) as Answer).result.value.blockhash as Blockhash;
    const wire = await buildTx(address(solanaAddress), [transferSol(user.address, to.address, 1_000_000n)], blockhash, [user.keyPair]);
    const signed = (await client.relayers.signTransaction(SOLANA_RELAYER, { transaction: wire })).data.data as { transaction: string; signature: string };
    expect(solana.executed).toHaveLength(0);
    const sent = (await rpc(SOLANA_RELAYER, { method: 'sendTransaction', params: [signed.transaction, { encoding: 'base64' }] })) as Answer;
    expect(sent, JSON.stringify(sent)).toMatchObject({ result: signed.signature });
    expect(solana.executed.map((e) => e.signature)).toEqual([signed.signature]);
    expect(solana.svm.getBalance(to.address)).toBe(1_000_000n);

    // Stellar: the stand-in applies a payment only with a valid signature of its source.
    const stellarAddress = (await client.relayers.getRelayer(STELLAR_RELAYER)).data.data!.address!;
    const dest = Keypair.random().publicKey();
    stellar.setAccount(stellarAddress, { balance: 100n * 10_000_000n, sequence: 500n });
    stellar.setAccount(dest, { balance: 10n * 10_000_000n, sequence: 1n });
    const unsigned = new TransactionBuilder(new Account(stellarAddress, '500'), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: dest, asset: Asset.native(), amount: '1' }))
      .setTimeout(300)
      .build()
      .toXDR();
    const xdrSigned = (await client.relayers.signTransaction(STELLAR_RELAYER, { unsigned_xdr: unsigned })).data.data as { signedXdr: string };
    expect(stellar.applied()).toHaveLength(0);
    const submitted = (await rpc(STELLAR_RELAYER, { method: 'sendTransaction', params: { transaction: xdrSigned.signedXdr } })) as Answer;
    expect(submitted.result.status).toBe('PENDING');
    stellar.closeLedger();
    expect(stellar.applied().map((a) => a.sequence)).toEqual([501n]);
    expect(stellar.account(dest)!.balance).toBe(11n * 10_000_000n);
  });

  it('the same operation through GraphQL', async () => {
    const res = await svc.gql('mutation($r: JSON!) { relayerRpc(relayerId: "evm-relayer", request: $r) }', {
      r: { jsonrpc: '2.0', id: 3, method: 'eth_chainId' },
    });
    expect(res.data.relayerRpc).toEqual({ jsonrpc: '2.0', id: 3, result: '0x7a69' });
  });

  it('answers bad requests in the envelope: 400 naming the field, 404 for an unknown relayer, 400 while paused', async () => {
    const cases: [() => Promise<unknown>, number, string, RegExp | string][] = [
      [() => client.relayers.rpc('evm-relayer', { jsonrpc: '2.0', id: 1, params: [] } as never), 400, 'Bad Request', 'method: required'],
      [() => client.relayers.rpc('evm-relayer', { jsonrpc: '1.0', id: 1, method: 'eth_chainId', params: [] }), 400, 'Bad Request', 'jsonrpc: must be "2.0"'],
      [
        () => client.relayers.rpc('evm-relayer', { jsonrpc: '2.0', id: { x: 1 }, method: 'eth_chainId', params: [] } as never),
        400,
        'Bad Request',
        'id: must be a string, an integer or null',
      ],
      [
        () => client.relayers.rpc('evm-relayer', { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: 5 } as never),
        400,
        'Bad Request',
        'params: must be an array or an object',
      ],
      [() => client.relayers.rpc('evm-relayer', [] as never), 400, 'Bad Request', 'body: an empty batch'],
      [
        () => client.relayers.rpc('evm-relayer', Array.from({ length: 101 }, () => ({ jsonrpc: '2.0', method: 'eth_chainId' })) as never),
        400,
        'Bad Request',
        'body: a batch of at most 100 calls',
      ],
      [() => client.relayers.rpc('evm-relayer', 'eth_chainId' as never), 400, 'Bad Request', /^body: /],
      [
        () => client.relayers.rpc('nobody', { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        404,
        'Relayer with ID nobody not found',
        'Relayer with ID nobody not found',
      ],
    ];
    for (const [call, status, message, error] of cases) {
      const res = await sdkError(call(), String(error));
      expect({ status: res.status, message: res.body.message }).toEqual({ status, message });
      expect(res.body.error).toMatch(error);
    }
    await client.relayers.updateRelayer('evm-relayer', { paused: true });
    const paused = await sdkError(client.relayers.rpc('evm-relayer', { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
    expect({ status: paused.status, error: paused.body.error }).toEqual({ status: 400, error: 'relayer evm-relayer is paused' });
    await client.relayers.updateRelayer('evm-relayer', { paused: false });
  });
});
