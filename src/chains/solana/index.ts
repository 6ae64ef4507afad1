export { SolanaRequestError } from './request-error.js';
export {
  createSolanaRpc,
  solanaRpcFrom,
  JsonRpcError,
  RpcUnavailableError,
  type SolanaRpc,
  type SignatureStatus,
  type Commitment,
} from './rpc-client.js';
export { decodeSolanaTx, usesDurableNonce, MAX_TRANSACTION_SIZE, type DecodedSolanaTx, type SolanaMessage } from './transaction.js';
export {
  prepareSolanaTx,
  SolanaBlockhashExpiredError,
  type PreparedSolanaTx,
  type SolanaPrepareContext,
  type SolanaSignerLike,
  type SolanaTransactionRequest,
} from './prepare.js';
export { checkSolanaTx, submitSolanaTx, type SolanaTxStatus, type SolanaSubmitOutcome } from './status.js';
export { solanaPolicySchema, checkSolanaPolicy, type SolanaPolicy } from './policy.js';
