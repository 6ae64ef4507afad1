import { RATE_LIMITED } from './rate-limit.js';
import { buildSponsoredTransaction, relayerRpc, signMessage, signTransaction, signTypedData, sponsoredQuote } from '../../core/relayers/sign-and-forward.js';
import type { MessageSignature, SignedTransaction } from '../../core/relayers/direct.js';
import type { SchemaParts } from './parts.js';
import { needs } from './access.js';
import { relayerBundler } from '../../core/relayers/bundler.js';
import { allowsNeed, need } from '../../core/access/permissions.js';

/** Signing without sending, and the JSON-RPC passthrough. */
export function directTypes({ builder }: SchemaParts) {
  // Acting as a relayer without sending: signing (messages, EIP-712 digests, transactions the caller
  // submits itself) and the JSON-RPC passthrough to the relayer's nodes (core/relayers/sign-and-forward.ts).

  type Evm = Extract<MessageSignature, { kind: 'evm' }>;
  type Ed25519 = Extract<MessageSignature, { kind: 'ed25519' }>;

  const EvmSignature = builder.objectRef<Evm>('EvmSignature').implement({
    description: 'A secp256k1 signature: r, s and sig (r ‖ s ‖ v) as hex without 0x, v 27 or 28.',
    fields: (t) => ({ r: t.exposeString('r'), s: t.exposeString('s'), v: t.exposeInt('v'), sig: t.exposeString('sig') }),
  });

  const Ed25519Signature = builder.objectRef<Ed25519>('Ed25519Signature').implement({
    description: 'An ed25519 signature (Solana: base58, Stellar: base64) and the public key (the relayer address).',
    fields: (t) => ({ signature: t.exposeString('signature'), publicKey: t.exposeString('publicKey') }),
  });

  const MessageSignatureRef = builder.unionType('MessageSignature', {
    types: [EvmSignature, Ed25519Signature],
    resolveType: (s) => (s.kind === 'evm' ? EvmSignature : Ed25519Signature),
  });

  const SolanaSignedTransaction = builder.objectRef<Extract<SignedTransaction, { kind: 'solana' }>>('SolanaSignedTransaction').implement({
    description: 'The base64 wire transaction with the relayer signature added, and that signature (base58).',
    fields: (t) => ({ transaction: t.exposeString('transaction'), signature: t.exposeString('signature') }),
  });

  const StellarSignedTransaction = builder.objectRef<Extract<SignedTransaction, { kind: 'stellar' }>>('StellarSignedTransaction').implement({
    description: 'The base64 envelope XDR with the relayer signature added, and that signature (base64).',
    fields: (t) => ({ signedXdr: t.exposeString('signedXdr'), signature: t.exposeString('signature') }),
  });

  const SignedTransactionRef = builder.unionType('SignedTransaction', {
    types: [SolanaSignedTransaction, StellarSignedTransaction],
    resolveType: (s) => (s.kind === 'solana' ? SolanaSignedTransaction : StellarSignedTransaction),
  });

  const SignMessageInput = builder.inputType('SignMessageInput', {
    fields: (t) => ({ message: t.string({ required: true, description: 'The text to sign (UTF-8).' }) }),
  });

  const SignTypedDataInput = builder.inputType('SignTypedDataInput', {
    fields: (t) => ({
      domainSeparator: t.string({ required: true, description: 'EIP-712 domain separator: 32 bytes of hex.' }),
      hashStructMessage: t.string({ required: true, description: 'EIP-712 hashStruct of the message: 32 bytes of hex.' }),
    }),
  });

  const SignTransactionInput = builder.inputType('SignTransactionInput', {
    fields: (t) => ({
      transaction: t.string({ required: false, description: 'Solana: a base64 wire transaction whose fee payer is the relayer.' }),
      unsignedXdr: t.string({ required: false, description: 'Stellar: a base64 transaction envelope XDR.' }),
    }),
  });

  builder.mutationFields((t) => ({
    signMessage: t.field({
      type: MessageSignatureRef,
      description:
        'Signs a message as the relayer, sending nothing: EVM EIP-191 (personal_sign), Solana ed25519 over the message bytes, Stellar SEP-53. Refused while the relayer is paused or disabled.',
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), input: t.arg({ type: SignMessageInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => signMessage(ctx.rt, String(a.relayerId), a.input.message),
    }),
    signTypedData: t.field({
      type: MessageSignatureRef,
      description: 'Signs an EIP-712 digest, keccak256(0x1901 ‖ domainSeparator ‖ hashStruct), as an EVM relayer, sending nothing.',
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), input: t.arg({ type: SignTypedDataInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => signTypedData(ctx.rt, String(a.relayerId), a.input),
    }),
    signTransaction: t.field({
      type: SignedTransactionRef,
      description: 'Adds the relayer signature to a Solana or Stellar transaction and returns it without submitting it.',
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), input: t.arg({ type: SignTransactionInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => signTransaction(ctx.rt, String(a.relayerId), a.input),
    }),
    sponsoredQuote: t.field({
      type: 'JSON',
      description:
        "Gasless (Solana, Stellar): what the user's transaction would cost in `fee_token`. Solana: request `{transaction, fee_token}`, answer `{estimated_fee, conversion_rate}`. Stellar: request `{transaction_xdr | operations + source_account, fee_token}` (`native`, `CODE:ISSUER`, or a `C…` token contract for a Soroban call), answer `{fee_in_token, fee_in_token_ui, conversion_rate}`, with `max_fee_in_token, max_fee_in_token_ui` for a Soroban call. Refused for EVM relayers (their gasless path is a bundler) and while the relayer is paused or disabled.",
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), request: t.arg({ type: 'JSON', required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => sponsoredQuote(ctx.rt, String(a.relayerId), a.request),
    }),
    buildSponsoredTransaction: t.field({
      type: 'JSON',
      description:
        "Gasless (Solana, Stellar): the transaction for the user to sign, with the relayer as fee payer and a transfer of the fee from the user to the relayer. Solana: request `{transaction, fee_token}`, answer `{transaction, fee_in_spl, fee_in_lamports, fee_token, valid_until_blockheight}`, the transaction signed by the relayer. Stellar: the Stellar quote request, answer `{transaction, fee_in_token, fee_in_token_ui, fee_in_stroops, fee_token, valid_until}`, the user's transaction with its payment of the fee to the relayer appended and valid for two minutes; the user signs it and sends it with `fee_bump: true`. A Soroban call (a `C…` fee token) is wrapped in the FeeForwarder's call with the relayer as source, and the answer adds `user_auth_entry` (to sign and send back as `signed_auth_entry` with the transaction) and the max fee.",
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), request: t.arg({ type: 'JSON', required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => buildSponsoredTransaction(ctx.rt, String(a.relayerId), a.request),
    }),
    relayerRpc: t.field({
      type: 'JSON',
      description:
        "Forwards a JSON-RPC 2.0 request (an object) or batch (an array) to the relayer's RPC URLs with failover, and returns the JSON-RPC answer. Methods that would sign, spend or use keys on the node, or administer it, are answered with a JSON-RPC error (-32601).",
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), request: t.arg({ type: 'JSON', required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'execute'),
      resolve: (_, a, ctx) => relayerRpc(ctx.rt, String(a.relayerId), a.request),
    }),
    relayerBundler: t.field({
      type: 'JSON',
      description:
        "The relayer's ERC-4337 bundler and ERC-7677 paymaster (EVM relayers with a `user_operations` policy): a JSON-RPC 2.0 request or batch, as its text, answered in JSON-RPC (ERC-7769's error codes). Reading (eth_getUserOperationByHash, eth_getUserOperationReceipt, eth_supportedEntryPoints, eth_chainId, eth_estimateUserOperationGas) needs the relayer's read permission; eth_sendUserOperation and pm_getPaymasterStubData/pm_getPaymasterData its execute permission.",
      directives: RATE_LIMITED,
      args: { relayerId: t.arg.id({ required: true }), request: t.arg.string({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'relayer', String(a.relayerId), 'read'),
      resolve: (_, a, ctx) => {
        const id = String(a.relayerId);
        return relayerBundler(ctx.rt, id, a.request, ctx.caller.admin || allowsNeed(ctx.caller.grants, need('relayer', id, 'execute')));
      },
    }),
  }));
}
