// The FeeForwarder contract's call and authorizations, as the reference relayer builds them for
// gasless Soroban calls: `forward(fee_token, fee_amount, max_fee_amount, expiration_ledger,
// target_contract, target_fn, target_args, user, relayer)` collects `fee_amount` of the token from
// the user for the relayer and makes the user's call. The user authorizes `forward` with the
// user's arguments (no fee_amount, no relayer), under which the token's `approve` of
// `max_fee_amount` to the forwarder and the target call; the relayer authorizes `forward` with
// all of them. Pure: XDR in, XDR out.
import { Address, hash as sha256, Keypair, nativeToScVal, scValToNative, StrKey, xdr } from '@stellar/stellar-sdk';

/** The reference's ledger close time and Soroban max-fee slippage (5%, in basis points). */
export const LEDGER_SECONDS = 5;
export const MAX_FEE_SLIPPAGE_BPS = 500n;

export const maxFeeWithSlippage = (fee: bigint) => (fee * (10_000n + MAX_FEE_SLIPPAGE_BPS)) / 10_000n;

/** The reference's expiration: the latest ledger plus the validity in ledgers (rounded up, at least one). */
export const expirationLedger = (latest: number, validitySeconds: number) => latest + Math.max(1, Math.ceil(validitySeconds / LEDGER_SECONDS));

export type ForwardCall = {
  forwarder: string;
  feeToken: string;
  feeAmount: bigint;
  maxFeeAmount: bigint;
  expirationLedger: number;
  target: string;
  targetFn: string;
  targetArgs: xdr.ScVal[];
  user: string;
  relayer: string;
};

const address = (a: string) => Address.fromString(a).toScVal();
const i128 = (n: bigint) => nativeToScVal(n, { type: 'i128' });
const u32 = (n: number) => xdr.ScVal.scvU32(n);

function invocation(contract: string, fn: string, args: xdr.ScVal[], subs: xdr.SorobanAuthorizedInvocation[] = []) {
  return new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
      new xdr.InvokeContractArgs({ contractAddress: Address.fromString(contract).toScAddress(), functionName: fn, args }),
    ),
    subInvocations: subs,
  });
}

/** The nine arguments of `forward`, in the contract's order. */
export function forwardArgs(c: ForwardCall): xdr.ScVal[] {
  return [
    address(c.feeToken),
    i128(c.feeAmount),
    i128(c.maxFeeAmount),
    u32(c.expirationLedger),
    address(c.target),
    xdr.ScVal.scvSymbol(c.targetFn),
    xdr.ScVal.scvVec(c.targetArgs),
    address(c.user),
    address(c.relayer),
  ];
}

/** What the user authorizes: `forward` with its arguments but fee_amount, user and relayer; the approve and the target call under it. */
export function userInvocation(c: ForwardCall): xdr.SorobanAuthorizedInvocation {
  const userArgs = [
    address(c.feeToken),
    i128(c.maxFeeAmount),
    u32(c.expirationLedger),
    address(c.target),
    xdr.ScVal.scvSymbol(c.targetFn),
    xdr.ScVal.scvVec(c.targetArgs),
  ];
  return invocation(c.forwarder, 'forward', userArgs, [
    invocation(c.feeToken, 'approve', [address(c.user), address(c.forwarder), i128(c.maxFeeAmount), u32(c.expirationLedger)]),
    invocation(c.target, c.targetFn, c.targetArgs),
  ]);
}

/** What the relayer authorizes: `forward` with all of its arguments. */
export const relayerInvocation = (c: ForwardCall) => invocation(c.forwarder, 'forward', forwardArgs(c));

/** An entry for `who` to sign: address credentials, an empty signature, valid to `expiration`. */
export function unsignedEntry(who: string, root: xdr.SorobanAuthorizedInvocation, nonce: bigint, expiration: number) {
  return new xdr.SorobanAuthorizationEntry({
    credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
      new xdr.SorobanAddressCredentials({
        address: Address.fromString(who).toScAddress(),
        nonce: xdr.Int64.fromString(nonce.toString()),
        signatureExpirationLedger: expiration,
        signature: xdr.ScVal.scvVec([]),
      }),
    ),
    rootInvocation: root,
  });
}

/** The hash an account signs for an entry: of its HashIdPreimage (network, nonce, expiration, invocation). */
export function authPayload(entry: xdr.SorobanAuthorizationEntry, networkPassphrase: string): Buffer {
  const creds = entry.credentials().address();
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: sha256(Buffer.from(networkPassphrase)),
      nonce: creds.nonce(),
      signatureExpirationLedger: creds.signatureExpirationLedger(),
      invocation: entry.rootInvocation(),
    }),
  );
  return sha256(preimage.toXDR());
}

/** The entry with an account's ed25519 signature, in the form Soroban accounts take: `[{public_key, signature}]`. */
export function withSignature(entry: xdr.SorobanAuthorizationEntry, publicKey: string, signature: Uint8Array): xdr.SorobanAuthorizationEntry {
  const copy = xdr.SorobanAuthorizationEntry.fromXDR(entry.toXDR());
  const sig = xdr.ScVal.scvMap([
    new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('public_key'), val: xdr.ScVal.scvBytes(StrKey.decodeEd25519PublicKey(publicKey)) }),
    new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('signature'), val: xdr.ScVal.scvBytes(Buffer.from(signature)) }),
  ]);
  copy
    .credentials()
    .address()
    .signature(xdr.ScVal.scvVec([sig]));
  return copy;
}

/** The account an entry's address credentials name; null for source-account credentials or a contract. */
export function entryAccount(entry: xdr.SorobanAuthorizationEntry): string | null {
  if (entry.credentials().switch().name !== 'sorobanCredentialsAddress') return null;
  const at = entry.credentials().address().address();
  return at.switch().name === 'scAddressTypeAccount' ? Address.fromScAddress(at).toString() : null;
}

/** Whether the entry carries exactly one signature, by its own account, that verifies over its payload. */
export function signatureVerifies(entry: xdr.SorobanAuthorizationEntry, networkPassphrase: string): boolean {
  const account = entryAccount(entry);
  if (!account) return false;
  const sig = entry.credentials().address().signature();
  if (sig.switch().name !== 'scvVec' || sig.vec()?.length !== 1) return false;
  let fields: { public_key?: unknown; signature?: unknown };
  try {
    fields = scValToNative(sig.vec()![0]) as typeof fields;
  } catch {
    return false;
  }
  // Bytes come back as Buffer or plain Uint8Array depending on the runtime's Buffer.
  if (!(fields.public_key instanceof Uint8Array) || !(fields.signature instanceof Uint8Array) || fields.signature.length !== 64) return false;
  if (!Buffer.from(fields.public_key).equals(StrKey.decodeEd25519PublicKey(account))) return false;
  return Keypair.fromPublicKey(account).verify(authPayload(entry, networkPassphrase), Buffer.from(fields.signature));
}

/** The `forward` host function of a FeeForwarder call. */
export function forwardHostFunction(c: ForwardCall): xdr.HostFunction {
  return xdr.HostFunction.hostFunctionTypeInvokeContract(
    new xdr.InvokeContractArgs({ contractAddress: Address.fromString(c.forwarder).toScAddress(), functionName: 'forward', args: forwardArgs(c) }),
  );
}

/** Reads a `forward` call back from its host function; null when it is not one (another contract, function or arguments). */
export function readForward(fn: xdr.HostFunction, forwarder: string): ForwardCall | null {
  if (fn.switch().name !== 'hostFunctionTypeInvokeContract') return null;
  const call = fn.invokeContract();
  try {
    const contract = Address.fromScAddress(call.contractAddress()).toString();
    if (contract !== forwarder || call.functionName().toString() !== 'forward') return null;
    const a = call.args();
    if (a.length !== 9) return null;
    const addr = (v: xdr.ScVal) => Address.fromScVal(v).toString();
    const big = (v: xdr.ScVal) => {
      if (v.switch().name !== 'scvI128') throw new Error('not i128');
      return BigInt(scValToNative(v) as bigint);
    };
    if (a[3].switch().name !== 'scvU32' || a[5].switch().name !== 'scvSymbol' || a[6].switch().name !== 'scvVec') return null;
    const c: ForwardCall = {
      forwarder,
      feeToken: addr(a[0]),
      feeAmount: big(a[1]),
      maxFeeAmount: big(a[2]),
      expirationLedger: a[3].u32(),
      target: addr(a[4]),
      targetFn: a[5].sym().toString(),
      targetArgs: a[6].vec() ?? [],
      user: addr(a[7]),
      relayer: addr(a[8]),
    };
    return c.feeToken.startsWith('C') && c.target.startsWith('C') && c.user.startsWith('G') && c.relayer.startsWith('G') ? c : null;
  } catch {
    return null;
  }
}

/** Same XDR. */
export const sameXdr = (a: { toXDR(): Buffer }, b: { toXDR(): Buffer }) => a.toXDR().equals(b.toXDR());
