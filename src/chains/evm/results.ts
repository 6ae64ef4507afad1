// The shape of the results the relayer reads from an EVM node. An answer with the right id but a
// result of another shape (a broken proxy, a node of another kind behind the URL) is the endpoint's
// fault: the client fails over instead of handing it to code that would trip on it.

const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;
const DATA = /^0x[0-9a-fA-F]*$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const quantity = (v: unknown) => typeof v === 'string' && QUANTITY.test(v);
const hash = (v: unknown) => typeof v === 'string' && HASH.test(v);

const CHECKS: Record<string, (result: unknown) => boolean> = {
  eth_blockNumber: quantity,
  eth_chainId: quantity,
  eth_gasPrice: quantity,
  eth_maxPriorityFeePerGas: quantity,
  eth_getBalance: quantity,
  eth_getTransactionCount: quantity,
  eth_estimateGas: quantity,
  eth_getCode: (r) => typeof r === 'string' && DATA.test(r),
  eth_call: (r) => typeof r === 'string' && DATA.test(r),
  eth_sendRawTransaction: hash,
  eth_getTransactionReceipt: (r) => r === null || (isObject(r) && hash(r.transactionHash) && quantity(r.blockNumber) && hash(r.blockHash)),
  eth_getTransactionByHash: (r) => r === null || (isObject(r) && hash(r.hash) && quantity(r.nonce)),
  eth_getBlockByNumber: (r) => r === null || (isObject(r) && quantity(r.number) && Array.isArray(r.transactions)),
  eth_getBlockByHash: (r) => r === null || (isObject(r) && quantity(r.number) && Array.isArray(r.transactions)),
  eth_feeHistory: (r) =>
    isObject(r) &&
    quantity(r.oldestBlock) &&
    (r.baseFeePerGas === undefined || Array.isArray(r.baseFeePerGas)) &&
    (r.reward === undefined || Array.isArray(r.reward)),
};

/** Whether `result` can be an answer to `method` (methods not listed here are not checked). */
export function isEvmResultShape(method: string, result: unknown): boolean {
  const check = CHECKS[method];
  return check ? check(result) : true;
}
