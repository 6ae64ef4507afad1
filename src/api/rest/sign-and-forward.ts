import {
  RestBuildSponsoredTransactionDocument,
  RestRelayerBundlerDocument,
  RestRelayerRpcDocument,
  RestSponsoredQuoteDocument,
  RestSignMessageDocument,
  RestSignTransactionDocument,
  RestSignTypedDataDocument,
  type RestMessageSignatureFragment,
} from '../../generated/graphql.js';
import { z } from 'zod';
import { BYTES32 } from '../../core/relayers/sign-and-forward.js';
import type { JsonSchema } from './records.js';
import type { Route } from './route.js';

// The REST routes of signing without sending and of the JSON-RPC passthrough (the reference's
// paths and bodies), their response schemas, and the reference's routes this service does not
// offer yet, answered 404.

const relayerId = { relayer_id: { gql: 'relayerId', description: "The relayer's unique identifier." } };
const hash32 = z.string().regex(BYTES32, 'must be 32 bytes of hex');

/** A message signature in the reference's form: EVM `{r, s, v, sig}`, ed25519 `{signature, public_key}`. */
/** The body of both sponsored routes: the user's transaction and the token it pays the fee in. */
const SPONSORED_BODY = {
  variable: 'request',
  description: 'The transaction and the fee token.',
  schema: z.object({}),
  json: { $ref: '#/components/schemas/SponsoredTransactionRequest' },
  example: { transaction: 'AQAAAA…', fee_token: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v' },
};

function messageSignature(s: RestMessageSignatureFragment) {
  return s.__typename === 'EvmSignature' ? { r: s.r, s: s.s, v: s.v, sig: s.sig } : { signature: s.signature, public_key: s.publicKey };
}

/** A JSON-RPC 2.0 request or a batch of them, as the /rpc and /bundler bodies are documented. */
const JSON_RPC_REQUESTS = {
  oneOf: [{ $ref: '#/components/schemas/JsonRpcRequest' }, { type: 'array', items: { $ref: '#/components/schemas/JsonRpcRequest' } }],
};
export const directRoutes: Route[] = [
  {
    id: 'signData',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/sign',
    tag: 'Relayers',
    summary: 'Sign a message',
    description:
      'Signs `message` as the relayer and sends nothing. EVM: EIP-191 personal message (`{r, s, v, sig}`, hex without 0x, v 27 or 28). Solana: ed25519 over the UTF-8 bytes (`{signature, public_key}`, base58). Stellar: SEP-53, ed25519 over SHA-256("Stellar Signed Message:\\n" ‖ message) (`{signature, public_key}`, signature in base64). Refused (400) while the relayer is paused or disabled.',
    document: RestSignMessageDocument,
    field: { type: 'Mutation', name: 'signMessage' },
    pathParams: relayerId,
    body: {
      variable: 'input',
      description: 'The message.',
      schema: z.strictObject({ message: z.string().meta({ description: 'The text to sign (UTF-8).' }) }),
      example: { message: 'hello' },
    },
    status: 200,
    response: { schema: 'MessageSignature', list: false },
    errors: [404],
    result: (d: { signMessage: RestMessageSignatureFragment }) => ({ data: messageSignature(d.signMessage) }),
  },
  {
    id: 'signTypedData',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/sign-typed-data',
    tag: 'Relayers',
    summary: 'Sign EIP-712 typed data',
    description:
      'EVM relayers: signs keccak256(0x1901 ‖ domain_separator ‖ hash_struct_message) and sends nothing; answers `{r, s, v, sig}`. Refused (400) for other network types and while the relayer is paused or disabled.',
    document: RestSignTypedDataDocument,
    field: { type: 'Mutation', name: 'signTypedData' },
    pathParams: relayerId,
    body: {
      variable: 'input',
      description: 'The two EIP-712 hashes.',
      schema: z.strictObject({
        domain_separator: hash32.meta({ description: 'The domain separator: 32 bytes of hex (0x optional).' }),
        hash_struct_message: hash32.meta({ description: 'hashStruct of the message: 32 bytes of hex (0x optional).' }),
      }),
      example: {
        domain_separator: '0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f',
        hash_struct_message: '0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e',
      },
    },
    status: 200,
    response: { schema: 'MessageSignature', list: false },
    errors: [404],
    result: (d: { signTypedData: RestMessageSignatureFragment }) => ({ data: messageSignature(d.signTypedData) }),
  },
  {
    id: 'signTransaction',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/sign-transaction',
    tag: 'Relayers',
    summary: 'Sign a transaction without sending it',
    description:
      'Solana (`transaction`: a base64 wire transaction whose fee payer is the relayer, checked against its policy): answers `{transaction, signature}`, the signature in base58. Stellar (`unsigned_xdr`: a base64 envelope): answers `{signedXdr, signature}`, the signature in base64. Nothing is submitted. Refused (400) for EVM relayers and while the relayer is paused or disabled.',
    document: RestSignTransactionDocument,
    field: { type: 'Mutation', name: 'signTransaction' },
    pathParams: relayerId,
    body: {
      variable: 'input',
      description: '`transaction` (Solana) or `unsigned_xdr` (Stellar).',
      schema: z.strictObject({
        transaction: z.string().optional().meta({ description: 'Solana: the base64 wire transaction.' }),
        unsigned_xdr: z.string().optional().meta({ description: 'Stellar: the base64 transaction envelope XDR.' }),
      }),
      example: { unsigned_xdr: 'AAAAAgAAAAB...' },
    },
    status: 200,
    response: { schema: 'SignedTransaction', list: false },
    errors: [404],
    result: (d: {
      signTransaction:
        | { __typename: 'SolanaSignedTransaction'; transaction: string; signature: string }
        | { __typename: 'StellarSignedTransaction'; signedXdr: string; signature: string };
    }) => {
      const { __typename: _, ...data } = d.signTransaction;
      return { data };
    },
  },
  {
    id: 'quoteSponsoredTransaction',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/transactions/sponsored/quote',
    tag: 'Transactions',
    summary: 'Quote a sponsored (gasless) transaction',
    description:
      "Solana relayers: `{transaction, fee_token}` (the user's base64 transaction and the SPL mint the user pays the fee in) answers `{estimated_fee, conversion_rate}`: the fee in whole tokens and the price, whole tokens per SOL (the policy's `allowed_tokens[].conversion_rate`, else Jupiter's quote). A token or transaction the relayer's policy refuses is a 400 naming the rule; a price source that fails is a 400 naming it. EVM relayers answer 400: gasless EVM goes through a bundler.",
    document: RestSponsoredQuoteDocument,
    field: { type: 'Mutation', name: 'sponsoredQuote' },
    pathParams: relayerId,
    body: SPONSORED_BODY,
    status: 200,
    response: { schema: 'SponsoredTransactionQuote', list: false },
    errors: [404],
    result: (d: { sponsoredQuote: unknown }) => ({ data: d.sponsoredQuote }),
  },
  {
    id: 'buildSponsoredTransaction',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/transactions/sponsored/build',
    tag: 'Transactions',
    summary: 'Build a sponsored (gasless) transaction',
    description:
      "Solana relayers: `{transaction, fee_token}` answers `{transaction, fee_in_spl, fee_in_lamports, fee_token, valid_until_blockheight}`: the user's instructions after a TransferChecked of `fee_in_spl` from the user's token account to the relayer's (created first when the relayer has none), with the relayer as fee payer, signed by the relayer. The user signs it and sends it (POST …/transactions with `transaction`, or `signAndSendTransaction` through …/rpc) before block height `valid_until_blockheight`; a late or altered one is refused. EVM relayers answer 400: gasless EVM goes through a bundler.",
    document: RestBuildSponsoredTransactionDocument,
    field: { type: 'Mutation', name: 'buildSponsoredTransaction' },
    pathParams: relayerId,
    body: SPONSORED_BODY,
    status: 200,
    response: { schema: 'SponsoredTransactionBuild', list: false },
    errors: [404],
    result: (d: { buildSponsoredTransaction: unknown }) => ({ data: d.buildSponsoredTransaction }),
  },
  {
    id: 'rpc',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/rpc',
    tag: 'Relayers',
    summary: "JSON-RPC to the relayer's network",
    description:
      'Forwards a JSON-RPC 2.0 request, or a batch (an array, at most 100 calls), to the relayer\'s RPC URLs with failover, and answers the JSON-RPC response itself (not the envelope), as the reference does. Forwarded: reads, simulation and the broadcast of transactions their own signers signed (EVM `eth_sendRawTransaction`, Solana and Stellar `sendTransaction`); any method that would sign, spend or use keys on the node (`eth_sign*`, `eth_sendTransaction`, `personal_*`, `eth_accounts`, `wallet_*`), administer it (`admin_*`, `debug_*`, `miner_*`, `txpool_*`, `anvil_*`, `hardhat_*`, `evm_*`) or keep state on one node (filters) is answered with the JSON-RPC error -32601 `Method not allowed`, its `description` saying why. A node that cannot be reached answers -33002. An ill-formed single request is a 400 naming the field; in a batch it is that call\'s -32600 error. Solana calls may be wrapped as the reference client does (`{"method": "rawRpcRequest", "params": {"method", "params"}}`). Refused (400) while the relayer is paused or disabled.',
    document: RestRelayerRpcDocument,
    field: { type: 'Mutation', name: 'relayerRpc' },
    pathParams: relayerId,
    body: {
      variable: 'request',
      description: 'A JSON-RPC 2.0 request or a batch of them.',
      schema: z.object({}),
      json: JSON_RPC_REQUESTS,
      example: { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
    },
    status: 200,
    raw: true,
    response: { schema: 'JsonRpcResponse', list: false },
    errors: [404],
    result: (d: { relayerRpc: unknown }) => ({ data: d.relayerRpc }),
  },
  {
    id: 'bundler',
    method: 'POST',
    path: '/api/v1/relayers/{relayer_id}/bundler',
    tag: 'Relayers',
    summary: "The relayer's ERC-4337 bundler and ERC-7677 paymaster",
    description:
      "EVM relayers with a `user_operations` policy: plain JSON-RPC 2.0 (a request or a batch of at most 100), answered in JSON-RPC, not the envelope. ERC-7769: `eth_sendUserOperation`, `eth_estimateUserOperationGas`, `eth_getUserOperationByHash`, `eth_getUserOperationReceipt`, `eth_supportedEntryPoints`, `eth_chainId` (EntryPoint v0.7 and v0.8, v0.8's `eip7702Auth` included), with its error codes (-32500 to -32507, -32602); ERC-7677: `pm_getPaymasterStubData`, `pm_getPaymasterData`, for operations the relayer's policy sponsors. Sending and paymaster data need the relayer's execute permission (else 403), the rest its read permission. Malformed JSON is -32700, a malformed call -32600, unknown methods -32601, bad params -32602. Other relayers answer every call -32601 naming why. Point viem's `createBundlerClient` (with `paymaster: true`) at this URL, with the API key as bearer token.",
    document: RestRelayerBundlerDocument,
    field: { type: 'Mutation', name: 'relayerBundler' },
    pathParams: relayerId,
    body: {
      variable: 'request',
      description: 'A JSON-RPC 2.0 request or a batch of them.',
      schema: z.object({}),
      text: true,
      json: JSON_RPC_REQUESTS,
      example: { jsonrpc: '2.0', id: 1, method: 'eth_supportedEntryPoints', params: [] },
    },
    status: 200,
    raw: true,
    response: { schema: 'BundlerResponse', list: false },
    errors: [403, 404],
    result: (d: { relayerBundler: unknown }) => ({ data: d.relayerBundler }),
  },
];

const hex = { type: 'string', pattern: '^[0-9a-f]*$' };
const jsonRpcId = { oneOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] };

export const directSchemas: Record<string, JsonSchema> = {
  MessageSignature: {
    description:
      'EVM: r, s and sig (r ‖ s ‖ v) in hex without 0x, v 27 or 28. Solana and Stellar: the ed25519 signature (Solana base58, Stellar base64) and the public key (the relayer address).',
    oneOf: [
      { type: 'object', required: ['r', 's', 'v', 'sig'], properties: { r: hex, s: hex, v: { type: 'integer', enum: [27, 28] }, sig: hex } },
      { type: 'object', required: ['signature', 'public_key'], properties: { signature: { type: 'string' }, public_key: { type: 'string' } } },
    ],
  },
  SignedTransaction: {
    description:
      'Solana: the base64 wire transaction with the relayer signature, and that signature (base58). Stellar: the base64 envelope XDR with the relayer signature, and that signature (base64).',
    oneOf: [
      { type: 'object', required: ['transaction', 'signature'], properties: { transaction: { type: 'string' }, signature: { type: 'string' } } },
      { type: 'object', required: ['signedXdr', 'signature'], properties: { signedXdr: { type: 'string' }, signature: { type: 'string' } } },
    ],
  },
  SponsoredTransactionRequest: {
    description:
      "Solana: the user's base64 wire transaction and the mint of the token the fee is paid in. Stellar: the user's transaction (`transaction_xdr`, or `operations` with `source_account`) and the fee token (`native` or `CODE:ISSUER`; a `C…` token contract when `transaction_xdr` is a Soroban call, paid through the FeeForwarder).",
    oneOf: [
      { type: 'object', required: ['transaction', 'fee_token'], properties: { transaction: { type: 'string' }, fee_token: { type: 'string' } } },
      {
        type: 'object',
        required: ['fee_token'],
        properties: {
          transaction_xdr: { type: 'string' },
          operations: { type: 'array', items: { type: 'object' } },
          source_account: { type: 'string' },
          fee_token: { type: 'string' },
        },
        additionalProperties: false,
      },
    ],
  },
  SponsoredTransactionQuote: {
    description:
      "Solana: the fee in whole tokens and the price, whole tokens per SOL. Stellar: the fee in the token's base units and in whole tokens, and the price, whole tokens per XLM; for a Soroban call also the max fee the user authorizes (5% above). All decimal strings.",
    oneOf: [
      {
        type: 'object',
        required: ['estimated_fee', 'conversion_rate'],
        properties: { estimated_fee: { type: 'string' }, conversion_rate: { type: 'string' } },
      },
      {
        type: 'object',
        required: ['fee_in_token', 'fee_in_token_ui', 'conversion_rate'],
        properties: {
          fee_in_token: { type: 'string' },
          fee_in_token_ui: { type: 'string' },
          conversion_rate: { type: 'string' },
          max_fee_in_token: { type: 'string' },
          max_fee_in_token_ui: { type: 'string' },
        },
      },
    ],
  },
  SponsoredTransactionBuild: {
    description:
      "Solana: the base64 transaction signed by the relayer (fee payer), the fee in token base units and in lamports (decimal strings), the fee token, and the last block height at which it can land. Stellar: the user's transaction XDR with its payment of the fee to the relayer appended (unsigned; the user signs it and sends it with fee_bump), the fee in the token (base units, whole tokens) and in stroops, the fee token, and when it expires (RFC 3339, two minutes on). Stellar Soroban call (a `C…` fee token): the FeeForwarder transaction with the relayer as source and fee payer, the user's authorization entry to sign (`user_auth_entry`, sent back signed as `signed_auth_entry` with the transaction) and the max fee it authorizes.",
    oneOf: [
      {
        type: 'object',
        required: ['transaction', 'fee_in_spl', 'fee_in_lamports', 'fee_token', 'valid_until_blockheight'],
        properties: {
          transaction: { type: 'string' },
          fee_in_spl: { type: 'string' },
          fee_in_lamports: { type: 'string' },
          fee_token: { type: 'string' },
          valid_until_blockheight: { type: 'integer' },
        },
      },
      {
        type: 'object',
        required: ['transaction', 'fee_in_token', 'fee_in_token_ui', 'fee_in_stroops', 'fee_token', 'valid_until'],
        properties: {
          transaction: { type: 'string' },
          fee_in_token: { type: 'string' },
          fee_in_token_ui: { type: 'string' },
          fee_in_stroops: { type: 'string' },
          fee_token: { type: 'string' },
          valid_until: { type: 'string', format: 'date-time' },
          user_auth_entry: { type: 'string' },
          max_fee_in_token: { type: 'string' },
          max_fee_in_token_ui: { type: 'string' },
        },
      },
    ],
  },
  JsonRpcRequest: {
    description: 'A JSON-RPC 2.0 call: an absent `id` is taken as 1, an absent `params` as [].',
    type: 'object',
    required: ['method'],
    properties: { jsonrpc: { const: '2.0' }, id: jsonRpcId, method: { type: 'string' }, params: { type: ['array', 'object'] } },
    additionalProperties: false,
  },
  JsonRpcResponse: {
    oneOf: [{ $ref: '#/components/schemas/JsonRpcAnswer' }, { type: 'array', items: { $ref: '#/components/schemas/JsonRpcAnswer' } }],
  },
  BundlerResponse: {
    oneOf: [{ $ref: '#/components/schemas/BundlerAnswer' }, { type: 'array', items: { $ref: '#/components/schemas/BundlerAnswer' } }],
  },
  BundlerAnswer: {
    description:
      "The answer to one call: `result`, or `error` with ERC-7769's `code` (-32500 to -32507, -32602) or JSON-RPC's, `message`, and `data` when there is more (the EntryPoint's reason).",
    type: 'object',
    required: ['jsonrpc', 'id'],
    properties: {
      jsonrpc: { const: '2.0' },
      id: jsonRpcId,
      result: {},
      error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} } },
    },
  },
  JsonRpcAnswer: {
    description: "The answer to one call: `result`, or `error` with `code`, `message`, `description` and the node's `data` when it gave any.",
    type: 'object',
    required: ['jsonrpc', 'id'],
    properties: {
      jsonrpc: { const: '2.0' },
      id: jsonRpcId,
      result: {},
      error: {
        type: 'object',
        required: ['code', 'message', 'description'],
        properties: { code: { type: 'integer' }, message: { type: 'string' }, description: { type: 'string' }, data: {} },
      },
    },
  },
};

/**
 * The reference's route families not offered yet: every path under these prefixes (`*` one
 * segment) answers 404 in the envelope, naming the feature, whatever the method.
 */
export const laterRoutes: { prefix: string[]; feature: string; paths: { method: string; path: string }[] }[] = [];

/** The message of a path of a feature not offered yet, or undefined. */
export function laterFeature(segments: string[]): string | undefined {
  const hit = laterRoutes.find((l) => l.prefix.length <= segments.length && l.prefix.every((p, i) => p === '*' || p === segments[i]));
  return hit && `${hit.feature}: not available on this service yet`;
}
