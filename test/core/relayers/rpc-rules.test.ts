// The JSON-RPC passthrough's rules as pure functions: what is forwarded, what is refused, and how
// the answer is assembled.
import { describe, expect, it } from 'vitest';
import { evmRefusal } from '../../../src/chains/evm/sign-and-forward.js';
import { solanaRefusal } from '../../../src/chains/solana/sign-and-forward.js';
import { stellarRefusal } from '../../../src/chains/stellar/sign-and-forward.js';
import { answerRpc, checkCall } from '../../../src/core/relayers/rpc-rules.js';
import { DomainError } from '../../../src/core/domain-error.js';

const evm = { refusal: evmRefusal };

describe('which methods the passthrough forwards', () => {
  it('EVM: reads, calls, estimates and raw transactions pass; signing, key, admin and filter methods do not', () => {
    for (const m of ['eth_call', 'eth_getBalance', 'eth_estimateGas', 'eth_getLogs', 'eth_sendRawTransaction', 'eth_chainId', 'net_version'])
      expect(evmRefusal(m), m).toBeNull();
    for (const m of [
      'eth_sign',
      'eth_signTransaction',
      'eth_signTypedData',
      'eth_signTypedData_v4',
      'eth_sendTransaction',
      'eth_accounts',
      'personal_sign',
      'personal_listAccounts',
      'wallet_switchEthereumChain',
    ]) {
      expect(evmRefusal(m), m).toMatch(/keys/);
    }
    for (const m of [
      'admin_addPeer',
      'debug_traceCall',
      'miner_setEtherbase',
      'txpool_content',
      'anvil_impersonateAccount',
      'hardhat_setBalance',
      'evm_increaseTime',
    ]) {
      expect(evmRefusal(m), m).toMatch(/administers the node/);
    }
    for (const m of ['eth_newFilter', 'eth_subscribe', 'eth_coinbase', 'ETH_CALL', 'eth_call ']) expect(evmRefusal(m), m).toMatch(/not offered/);
  });

  it('Solana and Stellar: node reads and client-signed sends pass; signing and the rest do not', () => {
    for (const m of ['getBalance', 'getLatestBlockhash', 'simulateTransaction', 'sendTransaction']) expect(solanaRefusal(m), m).toBeNull();
    for (const m of ['signTransaction', 'signAndSendTransaction', 'requestAirdrop', 'feeEstimate', 'getProgramAccountz'])
      expect(solanaRefusal(m), m).not.toBeNull();
    for (const m of ['getNetwork', 'getLedgerEntries', 'simulateTransaction', 'sendTransaction']) expect(stellarRefusal(m), m).toBeNull();
    expect(stellarRefusal('getAccount')).not.toBeNull();
  });
});

describe('checking one call', () => {
  it('defaults an absent id to 1 and absent params to [], as the reference does', () => {
    expect(checkCall({ method: 'eth_chainId' }, evm)).toEqual({ ok: true, id: 1, method: 'eth_chainId', params: [] });
    expect(checkCall({ jsonrpc: '2.0', id: null, method: 'eth_chainId', params: [] }, evm)).toMatchObject({ ok: true, id: null });
    expect(checkCall({ jsonrpc: '2.0', id: 'x', method: 'eth_call', params: { a: 1 } }, evm)).toMatchObject({ ok: true, id: 'x', params: { a: 1 } });
  });

  it('names what is wrong', () => {
    expect(checkCall({ jsonrpc: '2.0', id: 1.5, method: 'eth_chainId' }, evm)).toMatchObject({
      ok: false,
      id: null,
      why: 'id: must be a string, an integer or null',
    });
    expect(checkCall({ jsonrpc: '2.0', id: 2, method: '' }, evm)).toMatchObject({ ok: false, id: 2, why: 'method: must be a non-empty string', code: -32600 });
    expect(checkCall({ jsonrpc: '2.0', id: 2, method: 'eth_sign' }, evm)).toMatchObject({ ok: false, code: -32601 });
    expect(checkCall(7, evm)).toMatchObject({ ok: false, why: 'body: must be a JSON-RPC request object' });
  });
});

describe('answering', () => {
  it('forwards only the allowed calls, once, and answers every call in its place', async () => {
    const forwarded: string[][] = [];
    const answers = await answerRpc(
      [
        { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
        { jsonrpc: '2.0', id: 2, method: 'eth_sign', params: [] },
        { jsonrpc: '2.0', id: 3, method: 'eth_getBalance', params: ['0x0', 'latest'] },
        'junk',
      ],
      evm,
      async (calls) => {
        forwarded.push(calls.map((c) => c.method));
        return [
          { ok: true, result: '0x1' },
          { ok: false, error: { code: -32000, message: 'header not found', data: '0xdead' } },
        ];
      },
    );
    expect(forwarded).toEqual([['eth_chainId', 'eth_getBalance']]);
    expect(answers).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x1' },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not allowed', description: expect.stringMatching(/^eth_sign is refused/) } },
      { jsonrpc: '2.0', id: 3, error: { code: -32000, message: 'header not found', description: 'header not found', data: '0xdead' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request', description: 'body: must be a JSON-RPC request object' } },
    ]);
  });

  it('does not call the node when nothing is allowed; refuses an empty or oversized batch and an ill-formed single call', async () => {
    let called = false;
    const forward = async () => {
      called = true;
      return [];
    };
    expect(await answerRpc({ method: 'personal_sign' }, evm, forward)).toMatchObject({ id: 1, error: { code: -32601 } });
    expect(called).toBe(false);
    await expect(answerRpc([], evm, forward)).rejects.toThrow(DomainError);
    await expect(answerRpc(Array(101).fill({ method: 'eth_chainId' }), evm, forward)).rejects.toThrow('at most 100');
    await expect(answerRpc({ id: 1 }, evm, forward)).rejects.toThrow('method: required');
    expect(called).toBe(false);
  });
});
