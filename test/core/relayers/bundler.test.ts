import { describe, expect, it } from 'vitest';
import { JSONRPC, planCalls, readBundlerBody } from '../../../src/core/relayers/bundler.js';

const methods = { method: (m: string) => (({ eth_chainId: 'read', eth_sendUserOperation: 'write' }) as Record<string, 'read' | 'write'>)[m] };

describe('the bundler route as JSON-RPC', () => {
  it('answers a body that is not JSON-RPC as one error: parse error, empty batch, too large a batch', () => {
    expect(readBundlerBody('{')).toMatchObject({ answer: { jsonrpc: '2.0', id: null, error: { code: JSONRPC.parse } } });
    expect(readBundlerBody('')).toMatchObject({ answer: { error: { code: JSONRPC.parse } } });
    expect(readBundlerBody('[]')).toMatchObject({ answer: { error: { code: JSONRPC.invalidRequest } } });
    expect(readBundlerBody(JSON.stringify(Array(101).fill({})))).toMatchObject({ answer: { error: { code: JSONRPC.invalidRequest } } });
    expect(readBundlerBody('{"method":"eth_chainId"}')).toEqual({ batch: false, calls: [{ method: 'eth_chainId' }] });
    expect(readBundlerBody('[1,2]')).toEqual({ batch: true, calls: [1, 2] });
  });

  it("checks each call: its shape, the family's methods, params an array; says which need execute", () => {
    const plans = planCalls(
      [
        { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
        { jsonrpc: '2.0', id: 2, method: 'eth_sendUserOperation', params: [{}] },
        { jsonrpc: '2.0', id: 3, method: 'eth_sendTransaction', params: [] },
        { jsonrpc: '2.0', id: 4, method: 'eth_chainId', params: { a: 1 } },
        'nope',
      ],
      methods,
    );
    expect(plans.map((p) => [p.id, p.kind ?? (p.answer as { error: { code: number } }).error.code])).toEqual([
      [1, 'read'],
      [2, 'write'],
      [3, JSONRPC.methodNotFound],
      [4, JSONRPC.invalidParams],
      [null, JSONRPC.invalidRequest],
    ]);
  });
});
