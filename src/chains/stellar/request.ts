import { StrKey } from '@stellar/stellar-base';
import { z } from 'zod';
import { graphqlInfo, validUntilInfo } from '../../core/family-spec.js';
import { checkRules, exactlyOne, excludes, rulesJson } from '../../lib/field-rules.js';
import { boundedInt, jsonMessages, rfc3339Text } from '../../lib/validate.js';
import { StellarRequestError } from './request-error.js';

// The Stellar send-transaction request ("shape C"), in the spec's field names: the one place its
// field rules live (the service's shape check delegates here). Checks that need chain context
// (relayer address, clock, simulation) are in build.ts.

const INT64_MAX = (1n << 63n) - 1n;
/** Spec 8: the default fee cap of shape C. */
export const DEFAULT_MAX_FEE = 1_000_000n;
const UINT64_MAX = (1n << 64n) - 1n;

/**
 * A StrKey (account or contract address): its form as a pattern, and its checksum (the last two
 * bytes, a CRC16), which JSON Schema cannot state: the document says so and marks it x-checksum.
 */
const strKey = (pattern: RegExp, valid: (s: string) => boolean, message: string) =>
  z
    .string()
    .refine((s) => pattern.test(s) && valid(s), message)
    .meta({
      pattern: pattern.source,
      'x-checksum': 'stellar-strkey',
      description: `${message.replace(/^must be /, '')}: the pattern, and a valid StrKey checksum (CRC16), which JSON Schema cannot state (x-checksum).`,
    });
const accountAddress = strKey(/^G[A-Z2-7]{55}$/, (s) => StrKey.isValidEd25519PublicKey(s), 'must be a G... account address');
const destinationAddress = strKey(
  /^(G[A-Z2-7]{55}|M[A-Z2-7]{68})$/,
  (s) => StrKey.isValidEd25519PublicKey(s) || StrKey.isValidMed25519PublicKey(s),
  'must be a G... or M... account address',
);
const hex32 = z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex characters');
const bytes32 = z.union([hex32, z.array(z.number().int().min(0).max(255)).length(32)]);

/** A whole number given as a JSON integer (bigint beyond 2^53) or a decimal string. */
const wholeNumber = (what: string) =>
  z.union([z.number().int(what).nonnegative(what), z.bigint().nonnegative(what), z.string().regex(/^\d+$/, what)], what).transform((v) => BigInt(v));

/** Payment amounts are integer stroops (1 XLM = 10^7 stroops), as a JSON integer or a decimal string. */
const stroops = wholeNumber('must be an integer number of stroops').refine((v) => v > 0n && v <= INT64_MAX, 'must be between 1 and 2^63-1 stroops');

const asset = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('native') }),
  z.strictObject({
    type: z.literal('credit_alphanum4'),
    code: z.string().regex(/^[A-Za-z0-9]{1,4}$/, 'must be 1-4 alphanumeric characters'),
    issuer: accountAddress,
  }),
  z.strictObject({
    type: z.literal('credit_alphanum12'),
    code: z.string().regex(/^[A-Za-z0-9]{5,12}$/, 'must be 5-12 alphanumeric characters'),
    issuer: accountAddress,
  }),
]);

const operation = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('payment'), destination: destinationAddress, amount: stroops, asset }),
  z.strictObject({
    type: z.literal('invoke_contract'),
    contract_address: strKey(/^C[A-Z2-7]{55}$/, (s) => StrKey.isValidContract(s), 'must be a C... contract address'),
    function_name: z.string().regex(/^[A-Za-z0-9_]{1,32}$/, 'must be 1-32 characters of [A-Za-z0-9_]'),
    args: z.array(z.unknown()).default([]),
  }),
  z.strictObject({
    type: z.literal('create_contract'),
    source: z.strictObject({ from: z.literal('address'), address: accountAddress }),
    wasm_hash: hex32,
    salt: hex32.optional(),
    constructor_args: z.array(z.unknown()).optional(),
  }),
  z.strictObject({
    type: z.literal('upload_wasm'),
    wasm: z.union([
      z.strictObject({ type: z.literal('base64').optional(), base64: z.base64().min(1) }),
      z.strictObject({ type: z.literal('hex').optional(), hex: z.string().regex(/^([0-9a-fA-F]{2})+$/, 'must be hex') }),
    ]),
  }),
]);

const memo = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('none') }),
    z.strictObject({
      type: z.literal('text'),
      value: z.string().refine((s) => Buffer.byteLength(s, 'utf8') <= 28, 'must be at most 28 bytes of UTF-8'),
    }),
    z.strictObject({
      type: z.literal('id'),
      value: wholeNumber('must be a non-negative integer (or a uint64 decimal string)').refine((v) => v <= UINT64_MAX, 'must fit in a uint64'),
    }),
    z.strictObject({ type: z.literal('hash'), value: bytes32 }),
    z.strictObject({ type: z.literal('return'), value: bytes32 }),
  ])
  .register(graphqlInfo, { name: 'MemoInput' });

/** The rules between shape C's fields, in the order the service reports them: its two forms. */
const stellarRules = [
  exactlyOne(['operations', 'transaction_xdr'], 'exactly one of operations or transaction_xdr is required'),
  excludes('memo', ['transaction_xdr'], 'not allowed with transaction_xdr (the XDR carries its own memo)'),
  excludes('fee_bump', ['operations'], 'only applies to a signed transaction_xdr', true),
  excludes('signed_auth_entry', ['operations'], 'only applies to the transaction_xdr of a sponsored Soroban build'),
  excludes('fee_bump', ['signed_auth_entry'], "cannot be given with signed_auth_entry (a sponsored Soroban call is sent as the relayer's own)", true),
];

export const stellarTransactionRequestSchema = z
  .strictObject({
    network: z.string().min(1).meta({ description: 'Shape C (Stellar), required: the network name.' }),
    source_account: accountAddress.optional().meta({
      description:
        'Shape C: the source account (default: the relayer), a G... address with a valid StrKey checksum, which JSON Schema cannot state (x-checksum).',
    }),
    operations: z
      .array(operation)
      .min(1)
      .max(100)
      .optional()
      .meta({ description: 'Shape C: operations to build the transaction from; exclusive with transaction_xdr.' }),
    transaction_xdr: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'Shape C: a pre-built base64 XDR transaction, signed or unsigned; exclusive with operations.' }),
    memo: memo.optional().meta({
      description:
        'Shape C: `{"type": "none"}`, `{"type": "text", "value": string}`, `{"type": "id", "value": integer}`, `{"type": "hash" | "return", "value": [32 bytes]}`.',
    }),
    valid_until: rfc3339Text.optional().meta({ description: 'Shapes A and C: RFC 3339 expiry (default 8 hours).' }).register(graphqlInfo, validUntilInfo),
    fee_bump: z.boolean().optional().meta({ description: 'Shape C: wrap in a fee-bump transaction; only with a signed transaction_xdr.' }),
    signed_auth_entry: z.string().min(1).optional().meta({
      description:
        "Shape C: the user's signed SorobanAuthorizationEntry (base64 XDR), the `user_auth_entry` of a sponsored build signed; with that build's transaction_xdr (the reference's gasless Soroban submission).",
    }),
    /** Fee cap in stroops (int64). */
    max_fee: boundedInt(1n, INT64_MAX, 'int64')
      .prefault(Number(DEFAULT_MAX_FEE))
      .meta({ description: 'Shape C: fee cap in stroops (int64, default 1,000,000).' }),
  })
  .superRefine(checkRules(stellarRules))
  .meta(rulesJson(stellarRules));

export type StellarTransactionRequest = z.output<typeof stellarTransactionRequestSchema>;
export type StellarOperationSpec = z.output<typeof operation>;
export type StellarMemoSpec = z.output<typeof memo>;

function pathString(path: PropertyKey[]): string {
  return path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${String(p)}` : String(p)), '');
}

/**
 * Validates a request body (the spec's field names); throws StellarRequestError listing every
 * bad field as "field: why", its `field` naming the first.
 */
export function parseStellarRequest(body: unknown): StellarTransactionRequest {
  const res = stellarTransactionRequestSchema.safeParse(body, { error: jsonMessages });
  if (res.success) return res.data;
  const issues = res.error.issues.map((i) => {
    const field = pathString(i.path) || 'request';
    if (i.code === 'unrecognized_keys') return { field, text: `${i.keys.map((k) => (field === 'request' ? k : `${field}.${k}`)).join(', ')}: unknown field` };
    return { field, text: `${field}: ${i.message}` };
  });
  throw new StellarRequestError(issues.map((i) => i.text).join('; '), issues[0].field);
}
