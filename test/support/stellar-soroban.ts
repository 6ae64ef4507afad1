// The contracts the Stellar stand-in knows, interpreted natively: NO contract wasm runs here (no
// Soroban VM on this machine). A token speaks the Stellar Asset Contract's interface for what the
// gasless flow calls (balance, transfer, approve, transfer_from) and a FeeForwarder `forward` does
// what the reference's contract is documented to do: under the user's authorization, approve the
// forwarder for max_fee_amount, move fee_amount from the user to the relayer, then make the user's
// call. Authorization is checked for real: an entry with address credentials needs an ed25519
// signature by that account over the sha256 of its HashIdPreimage (network id, nonce, expiration
// ledger, invocation), an unexpired ledger and an unused nonce; each require_auth is met by an
// unused invocation of that address's entries with the same contract, function and arguments.
// Simplified: the invocation is matched anywhere in the entry's tree, not by call-stack position.
import { randomBytes } from 'node:crypto';
import { Address, hash as sha256, Keypair, scValToNative, StrKey, xdr } from '@stellar/stellar-sdk';

type Token = { balances: Map<string, bigint>; allowances: Map<string, { amount: bigint; expiration: number }> };

export type SorobanState = {
  tokens: Map<string, Token>;
  forwarders: Set<string>;
  /** `address:nonce` of the signed entries applied. */
  nonces: Set<string>;
};

export const newSorobanState = (): SorobanState => ({ tokens: new Map(), forwarders: new Set(), nonces: new Set() });

export function cloneState(s: SorobanState): SorobanState {
  const tokens = new Map<string, Token>();
  for (const [id, t] of s.tokens) tokens.set(id, { balances: new Map(t.balances), allowances: new Map(t.allowances) });
  return { tokens, forwarders: new Set(s.forwarders), nonces: new Set(s.nonces) };
}

export const newContractId = () => StrKey.encodeContract(randomBytes(32));

/** A contract's failure (the host traps): the message says why. */
class Trap extends Error {}

type Node = { inv: xdr.SorobanAuthorizedInvocation; used: boolean; children: Node[] };
type Authorizer = { address: string; nodes: Node[] };

function tree(inv: xdr.SorobanAuthorizedInvocation): Node {
  return { inv, used: false, children: inv.subInvocations().map(tree) };
}

function verifyEntry(entry: xdr.SorobanAuthorizationEntry, networkPassphrase: string, ledger: number, state: SorobanState): string {
  const creds = entry.credentials().address();
  const address = Address.fromScAddress(creds.address()).toString();
  if (!address.startsWith('G')) throw new Trap(`auth: contract credentials are not supported by the stand-in (${address})`);
  if (creds.signatureExpirationLedger() < ledger) throw new Trap(`auth: the signature of ${address} expired at ledger ${creds.signatureExpirationLedger()}`);
  const nonceKey = `${address}:${creds.nonce().toString()}`;
  if (state.nonces.has(nonceKey)) throw new Trap(`auth: nonce ${creds.nonce().toString()} of ${address} already used`);
  const payload = sha256(
    xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
      new xdr.HashIdPreimageSorobanAuthorization({
        networkId: sha256(Buffer.from(networkPassphrase)),
        nonce: creds.nonce(),
        signatureExpirationLedger: creds.signatureExpirationLedger(),
        invocation: entry.rootInvocation(),
      }),
    ).toXDR(),
  );
  const sigs = creds.signature().switch().name === 'scvVec' ? (creds.signature().vec() ?? []) : [];
  const kp = Keypair.fromPublicKey(address);
  const ok = sigs.some((s) => {
    try {
      const v = scValToNative(s) as { public_key?: Uint8Array; signature?: Uint8Array };
      if (!(v.public_key instanceof Uint8Array) || !(v.signature instanceof Uint8Array)) return false;
      return Buffer.from(v.public_key).equals(kp.rawPublicKey()) && kp.verify(payload, Buffer.from(v.signature));
    } catch {
      return false;
    }
  });
  if (!ok) throw new Trap(`auth: no valid signature of ${address} over its authorization entry`);
  state.nonces.add(nonceKey);
  return address;
}

export type Invocation = { contract: string; fn: string; args: xdr.ScVal[] };
export type RunContext = {
  networkPassphrase: string;
  ledger: number;
  /** The transaction's source (source-account credentials authorize as it). */
  source: string;
  auth: xdr.SorobanAuthorizationEntry[];
  /** Simulation without auth entries: require_auth is recorded, not enforced (as the RPC's recording mode). */
  recording: boolean;
};

const addr = (v: xdr.ScVal) => Address.fromScVal(v).toString();
const i128 = (v: xdr.ScVal) => {
  if (v.switch().name !== 'scvI128') throw new Trap('expected an i128 argument');
  return BigInt(scValToNative(v) as bigint);
};
const toI128 = (n: bigint) =>
  xdr.ScVal.scvI128(new xdr.Int128Parts({ hi: xdr.Int64.fromString((n >> 64n).toString()), lo: xdr.Uint64.fromString((n & ((1n << 64n) - 1n)).toString()) }));
const sameArgs = (a: xdr.ScVal[], b: xdr.ScVal[]) => xdr.ScVal.scvVec(a).toXDR().equals(xdr.ScVal.scvVec(b).toXDR());

/**
 * Runs a contract call against `state` (mutated: pass a clone and keep it only on success).
 * Returns its value, or null when the contract is not one the stand-in knows (the caller decides).
 */
export function run(state: SorobanState, call: Invocation, ctx: RunContext): xdr.ScVal | null {
  if (!state.tokens.has(call.contract) && !state.forwarders.has(call.contract)) return null;
  const authorizers: Authorizer[] = ctx.recording
    ? []
    : ctx.auth.map((entry) => ({
        address:
          entry.credentials().switch().name === 'sorobanCredentialsSourceAccount' ? ctx.source : verifyEntry(entry, ctx.networkPassphrase, ctx.ledger, state),
        nodes: [tree(entry.rootInvocation())],
      }));

  function requireAuth(address: string, caller: string | null, contract: string, fn: string, args: xdr.ScVal[]) {
    if (ctx.recording || address === caller) return; // a contract authorizes what it calls itself
    const find = (nodes: Node[]): Node | undefined => {
      for (const n of nodes) {
        const f = n.inv.function();
        if (!n.used && f.switch().name === 'sorobanAuthorizedFunctionTypeContractFn') {
          const c = f.contractFn();
          if (Address.fromScAddress(c.contractAddress()).toString() === contract && c.functionName().toString() === fn && sameArgs(c.args(), args)) return n;
        }
        const deeper = find(n.children);
        if (deeper) return deeper;
      }
      return undefined;
    };
    for (const a of authorizers.filter((x) => x.address === address)) {
      const n = find(a.nodes);
      if (n) {
        n.used = true;
        return;
      }
    }
    throw new Trap(`auth: ${address} has not authorized ${contract}.${fn}`);
  }

  function invoke(c: Invocation, caller: string | null): xdr.ScVal {
    const token = state.tokens.get(c.contract);
    if (token) return tokenCall(token, c, caller);
    if (state.forwarders.has(c.contract)) return forward(c, caller);
    throw new Trap(`contract ${c.contract} does not exist in the stand-in`);
  }

  function move(token: Token, from: string, to: string, amount: bigint) {
    if (amount < 0n) throw new Trap('negative amount');
    const have = token.balances.get(from) ?? 0n;
    if (have < amount) throw new Trap(`balance of ${from} is ${have}, less than ${amount}`);
    token.balances.set(from, have - amount);
    token.balances.set(to, (token.balances.get(to) ?? 0n) + amount);
  }

  function tokenCall(token: Token, c: Invocation, caller: string | null): xdr.ScVal {
    const a = c.args;
    switch (c.fn) {
      case 'balance':
        return toI128(token.balances.get(addr(a[0])) ?? 0n);
      case 'decimals':
        return xdr.ScVal.scvU32(7);
      case 'transfer':
        requireAuth(addr(a[0]), caller, c.contract, 'transfer', a);
        move(token, addr(a[0]), addr(a[1]), i128(a[2]));
        return xdr.ScVal.scvVoid();
      case 'approve': {
        requireAuth(addr(a[0]), caller, c.contract, 'approve', a);
        token.allowances.set(`${addr(a[0])}|${addr(a[1])}`, { amount: i128(a[2]), expiration: a[3].u32() });
        return xdr.ScVal.scvVoid();
      }
      case 'transfer_from': {
        const [spender, from, to, amount] = [addr(a[0]), addr(a[1]), addr(a[2]), i128(a[3])];
        requireAuth(spender, caller, c.contract, 'transfer_from', a);
        const key = `${from}|${spender}`;
        const allowance = token.allowances.get(key);
        if (!allowance || allowance.expiration < ctx.ledger || allowance.amount < amount)
          throw new Trap(`allowance of ${spender} over ${from} is below ${amount}`);
        token.allowances.set(key, { ...allowance, amount: allowance.amount - amount });
        move(token, from, to, amount);
        return xdr.ScVal.scvVoid();
      }
      default:
        throw new Trap(`token has no function ${c.fn}`);
    }
  }

  // forward(fee_token, fee_amount, max_fee_amount, expiration_ledger, target_contract, target_fn, target_args, user, relayer)
  function forward(c: Invocation, caller: string | null): xdr.ScVal {
    if (c.fn !== 'forward' || c.args.length !== 9) throw new Trap(`FeeForwarder has no function ${c.fn}/${c.args.length}`);
    const [feeToken, feeAmount, maxFee, expiration, target, targetFn, targetArgs, user, relayer] = c.args;
    requireAuth(addr(user), caller, c.contract, 'forward', [feeToken, maxFee, expiration, target, targetFn, targetArgs]);
    requireAuth(addr(relayer), caller, c.contract, 'forward', c.args);
    if (ctx.ledger > expiration.u32()) throw new Trap(`forward: expired at ledger ${expiration.u32()}`);
    if (i128(feeAmount) > i128(maxFee)) throw new Trap('forward: fee_amount exceeds max_fee_amount');
    const tokenId = addr(feeToken);
    invoke({ contract: tokenId, fn: 'approve', args: [user, Address.fromString(c.contract).toScVal(), maxFee, expiration] }, c.contract);
    invoke({ contract: tokenId, fn: 'transfer_from', args: [Address.fromString(c.contract).toScVal(), user, relayer, feeAmount] }, c.contract);
    return invoke({ contract: addr(target), fn: targetFn.sym().toString(), args: targetArgs.vec() ?? [] }, c.contract);
  }

  return invoke(call, null);
}

/** Runs a call; a trap is the failure's message. */
export function tryRun(state: SorobanState, call: Invocation, ctx: RunContext): { ok: true; value: xdr.ScVal | null } | { ok: false; error: string } {
  try {
    return { ok: true, value: run(state, call, ctx) };
  } catch (e) {
    if (e instanceof Trap) return { ok: false, error: e.message };
    return { ok: false, error: `host error: ${(e as Error).message}` };
  }
}

/** The contract call of an invokeContract host function. */
export function invocationOf(fn: xdr.HostFunction): Invocation | null {
  if (fn.switch().name !== 'hostFunctionTypeInvokeContract') return null;
  const c = fn.invokeContract();
  return { contract: Address.fromScAddress(c.contractAddress()).toString(), fn: c.functionName().toString(), args: c.args() };
}
