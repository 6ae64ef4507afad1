export { StellarRequestError } from './request-error.js';
export { JsonRpcError, RpcUnavailableError, createJsonRpcClient, type JsonRpcClient } from '../jsonrpc.js';
export { createStellarRpc, stellarRpcFrom, accountLedgerKey, type StellarRpc, type StellarAccountState } from './rpc-client.js';
export { parseStellarRequest, stellarTransactionRequestSchema, type StellarTransactionRequest } from './request.js';
export {
  buildFromOperations,
  prepareFromXdr,
  buildStellarTransaction,
  needsRelayerSequence,
  type BuiltStellarTx,
  type StellarBuildContext,
  type StellarSignerLike,
} from './build.js';
export {
  submitStellarTx,
  checkStellarTx,
  describeTransactionResult,
  type StellarSubmitOutcome,
  type StellarTxStatus,
} from './status.js';
export { stellarPolicySchema, checkStellarPolicy, type StellarPolicy } from './policy.js';
