// A local stand-in for Stellar RPC: enough of the JSON-RPC API, with enough of
// the ledger rules (signatures, sequence numbers, fees, time bounds, payments
// of XLM and of classic assets over trustlines), to run the relayer's Stellar
// path end to end without a network. Contract calls to the tokens and
// FeeForwarders added with addToken / addFeeForwarder are interpreted natively
// (stellar-soroban.ts: no wasm runs), with their authorizations checked; calls
// to any other contract are not executed and succeed with void.
import {
  Address,
  FeeBumpTransaction,
  hash as sha256,
  Keypair,
  SorobanDataBuilder,
  StrKey,
  type Transaction,
  TransactionBuilder,
  xdr,
} from '@stellar/stellar-sdk';
import { RpcFault, startJsonRpcServer } from './jsonrpc-server.js';
import { cloneState, invocationOf, newContractId, newSorobanState, tryRun, type SorobanState } from './stellar-soroban.js';

export type StellarStubAccount = { address: string; balance: bigint; sequence: bigint };

export type StellarRpcStub = {
  url: string;
  port: number;
  stop(): Promise<void>;
  ledger(): { sequence: number; closeTime: number };
  account(address: string): { balance: bigint; sequence: bigint } | undefined;
  setAccount(address: string, state: { balance?: bigint; sequence?: bigint }): void;
  /** The account's balance of a classic asset (`CODE:ISSUER`), in its stroops; undefined without a trustline. */
  trustline(address: string, asset: string): bigint | undefined;
  /** Opens (or sets the balance of) the account's trustline to a classic asset `CODE:ISSUER`. */
  setTrustline(address: string, asset: string, balance: bigint): void;
  /** Closes a ledger now: applies queued transactions. */
  closeLedger(): void;
  /** The next sendTransaction answers with this status instead of validating. */
  nextSendStatus(status: 'TRY_AGAIN_LATER'): void;
  /** Names of the methods called so far. */
  calls: string[];
  /** Every transaction applied in a ledger, in order: hash, (inner) source and sequence, envelope. */
  applied(): { hash: string; source: string; sequence: bigint; ledger: number; envelopeXdr: string }[];
  /**
   * How many ledgers of transaction history the RPC keeps (getTransaction / getTransactions);
   * older ones are NOT_FOUND, as on a real RPC past its retention window. Default: all.
   */
  setRetention(ledgers: number | undefined): void;
  /** Adds a token contract (the Stellar Asset Contract's balance/transfer/approve/transfer_from) holding `balances`; its C… id. */
  addToken(balances?: Record<string, bigint>): string;
  /** A token contract's balance of an address (G… or C…). */
  tokenBalance(contract: string, address: string): bigint;
  /** Adds a FeeForwarder contract (its `forward`); its C… id. */
  addFeeForwarder(): string;
};

const BASE_FEE = 100n;
const BASE_RESERVE = 10_000_000n; // 1 XLM: 2 x 0.5 XLM for an account without subentries
const SUBENTRY_RESERVE = 5_000_000n; // 0.5 XLM more for each trustline
const MAX_LIMIT = (1n << 63n) - 1n;
const PROTOCOL_VERSION = 23;

type Envelope = Transaction | FeeBumpTransaction;
type Pending = { env: Envelope; hash: string; xdr: string };
type Recorded = {
  status: 'SUCCESS' | 'FAILED';
  ledger: number;
  createdAt: number;
  applicationOrder: number;
  feeBump: boolean;
  envelopeXdr: string;
  resultXdr: string;
};

const i64 = (n: bigint) => xdr.Int64.fromString(n.toString());
// The network's clock, not the test's: a test that fakes Date (to play a late submission) must not
// move the stand-in's ledger close times, which never go back.
const EPOCH_MS = Date.now();
const EPOCH_PERF = performance.now();
const nowSeconds = () => Math.floor((EPOCH_MS + performance.now() - EPOCH_PERF) / 1000);

function txResult(fee: bigint, result: xdr.TransactionResultResult): xdr.TransactionResult {
  return new xdr.TransactionResult({ feeCharged: i64(fee), result, ext: new xdr.TransactionResultExt(0) });
}

function innerFailed(innerHash: Buffer, fee: bigint, inner: xdr.InnerTransactionResultResult): xdr.TransactionResultResult {
  return xdr.TransactionResultResult.txFeeBumpInnerFailed(
    new xdr.InnerTransactionResultPair({
      transactionHash: innerHash,
      result: new xdr.InnerTransactionResult({ feeCharged: i64(fee), result: inner, ext: new xdr.InnerTransactionResultExt(0) }),
    }),
  );
}

function hasSignatureFrom(signatures: xdr.DecoratedSignature[], txHash: Buffer, address: string): boolean {
  const kp = Keypair.fromPublicKey(address);
  return signatures.some((s) => s.hint().equals(kp.signatureHint()) && kp.verify(txHash, s.signature()));
}

function resourceFeeOf(tx: Transaction): bigint {
  const ext = tx.toEnvelope().v1().tx().ext();
  return ext.switch() === 1 ? BigInt(ext.sorobanData().resourceFee().toString()) : 0n;
}

function baseAccount(address: string): string {
  if (StrKey.isValidMed25519PublicKey(address)) {
    return StrKey.encodeEd25519PublicKey(StrKey.decodeMed25519PublicKey(address).subarray(0, 32));
  }
  return address;
}

function amountToStroops(amount: string): bigint {
  const [whole, frac = ''] = amount.split('.');
  return BigInt(whole) * 10_000_000n + BigInt(frac.padEnd(7, '0'));
}

export async function startStellarRpc(opts: {
  networkPassphrase: string;
  accounts: StellarStubAccount[];
  /** Ledger close interval; 0 disables the timer (close with closeLedger()). Default 200ms. */
  ledgerIntervalMs?: number;
}): Promise<StellarRpcStub> {
  const { networkPassphrase } = opts;
  const networkId = sha256(Buffer.from(networkPassphrase));
  const accounts = new Map<string, { balance: bigint; sequence: bigint }>();
  /** Trustlines by account, then by `CODE:ISSUER`: the balance. */
  const trustlines = new Map<string, Map<string, bigint>>();
  const linesOf = (address: string) => trustlines.get(address) ?? new Map<string, bigint>();
  const reserveOf = (address: string) => BASE_RESERVE + SUBENTRY_RESERVE * BigInt(linesOf(address).size);
  for (const a of opts.accounts) accounts.set(a.address, { balance: a.balance, sequence: a.sequence });
  let ledgerSeq = 1000;
  let closeTime = nowSeconds();
  let queue: Pending[] = [];
  const results = new Map<string, Recorded>();
  let forcedStatus: 'TRY_AGAIN_LATER' | undefined;
  let retention: number | undefined;
  let soroban: SorobanState = newSorobanState();
  const appliedOrder: string[] = [];
  const oldestLedger = () => (retention === undefined ? 1000 : Math.max(1000, ledgerSeq - retention + 1));

  function innerOf(env: Envelope): Transaction {
    return env instanceof FeeBumpTransaction ? env.innerTransaction : env;
  }

  function minFee(tx: Transaction, extraOps = 0): bigint {
    return BASE_FEE * BigInt(tx.operations.length + extraOps) + resourceFeeOf(tx);
  }

  function pendingFrom(source: string): number {
    return queue.filter((p) => innerOf(p.env).source === source).length;
  }

  // Returns null when valid, else the failed result arm (core's checkValid at submission).
  function checkInner(tx: Transaction, at: number, queued: number): xdr.TransactionResultResult | null {
    const R = xdr.TransactionResultResult;
    const minTime = Number(tx.timeBounds?.minTime ?? 0);
    const maxTime = Number(tx.timeBounds?.maxTime ?? 0);
    if (minTime > at) return R.txTooEarly();
    if (maxTime !== 0 && maxTime < at) return R.txTooLate();
    if (tx.operations.length === 0) return R.txMissingOperation();
    if (BigInt(tx.fee) < minFee(tx)) return R.txInsufficientFee();
    const source = accounts.get(tx.source);
    if (!source) return R.txNoAccount();
    if (BigInt(tx.sequence) !== source.sequence + 1n + BigInt(queued)) return R.txBadSeq();
    if (!hasSignatureFrom(tx.signatures, tx.hash(), tx.source)) return R.txBadAuth();
    return null;
  }

  function validate(env: Envelope): xdr.TransactionResult | null {
    const at = closeTime;
    if (env instanceof FeeBumpTransaction) {
      const inner = env.innerTransaction;
      const fee = BigInt(env.fee);
      if (fee < minFee(inner, 1)) return txResult(fee, xdr.TransactionResultResult.txInsufficientFee());
      const payer = accounts.get(env.feeSource);
      if (!payer) return txResult(fee, xdr.TransactionResultResult.txNoAccount());
      if (!hasSignatureFrom(env.signatures, env.hash(), env.feeSource)) return txResult(fee, xdr.TransactionResultResult.txBadAuth());
      if (payer.balance - fee < reserveOf(env.feeSource)) return txResult(fee, xdr.TransactionResultResult.txInsufficientBalance());
      const innerArm = checkInner(inner, at, pendingFrom(inner.source));
      if (innerArm) {
        const asInner = (xdr.InnerTransactionResultResult as unknown as Record<string, () => xdr.InnerTransactionResultResult>)[innerArm.switch().name]();
        return txResult(fee, innerFailed(inner.hash(), 0n, asInner));
      }
      return null;
    }
    const fee = BigInt(env.fee);
    const arm = checkInner(env, at, pendingFrom(env.source));
    if (arm) return txResult(fee, arm);
    const payer = accounts.get(env.source)!;
    if (payer.balance - fee < reserveOf(env.source)) return txResult(fee, xdr.TransactionResultResult.txInsufficientBalance());
    return null;
  }

  // Applies operations to a copy of the balances; returns op results and whether all succeeded.
  function applyOps(tx: Transaction): {
    ok: boolean;
    results: xdr.OperationResult[];
    balances: Map<string, bigint>;
    lines: Map<string, Map<string, bigint>>;
    contracts: SorobanState;
  } {
    const balances = new Map<string, bigint>();
    const contracts = cloneState(soroban);
    const bal = (a: string) => balances.get(a) ?? accounts.get(a)?.balance;
    // Trustlines as the operations leave them (copies of the touched accounts' lines).
    const lines = new Map<string, Map<string, bigint>>();
    const linesFor = (a: string) => {
      let l = lines.get(a);
      if (!l) lines.set(a, (l = new Map(linesOf(a))));
      return l;
    };
    const results: xdr.OperationResult[] = [];
    let ok = true;
    for (const op of tx.operations) {
      if (op.type === 'payment') {
        const from = baseAccount(op.source ?? tx.source);
        const to = baseAccount(op.destination);
        const amount = amountToStroops(op.amount);
        let res: xdr.PaymentResult;
        if (!op.asset.isNative()) res = creditPayment(from, to, `${op.asset.getCode()}:${op.asset.getIssuer()}`, amount);
        else if (bal(to) === undefined) res = xdr.PaymentResult.paymentNoDestination();
        else if ((bal(from) ?? 0n) - amount < reserveOf(from)) res = xdr.PaymentResult.paymentUnderfunded();
        else {
          balances.set(from, bal(from)! - amount);
          balances.set(to, bal(to)! + amount);
          res = xdr.PaymentResult.paymentSuccess();
        }
        if (res.switch().name !== 'paymentSuccess') ok = false;
        results.push(xdr.OperationResult.opInner(xdr.OperationResultTr.payment(res)));
      } else if (op.type === 'changeTrust' && 'code' in op.line) {
        const source = baseAccount(op.source ?? tx.source);
        const asset = `${op.line.getCode()}:${op.line.getIssuer()}`;
        const mine = linesFor(source);
        let res: xdr.ChangeTrustResult;
        if (op.line.getIssuer() === source) res = xdr.ChangeTrustResult.changeTrustMalformed();
        else if (amountToStroops(op.limit) === 0n) {
          if ((mine.get(asset) ?? 0n) > 0n) res = xdr.ChangeTrustResult.changeTrustInvalidLimit();
          else {
            mine.delete(asset);
            res = xdr.ChangeTrustResult.changeTrustSuccess();
          }
        } else if (!mine.has(asset) && (bal(source) ?? 0n) < reserveOf(source) + SUBENTRY_RESERVE) res = xdr.ChangeTrustResult.changeTrustLowReserve();
        else {
          if (!mine.has(asset)) mine.set(asset, 0n);
          res = xdr.ChangeTrustResult.changeTrustSuccess();
        }
        if (res.switch().name !== 'changeTrustSuccess') ok = false;
        results.push(xdr.OperationResult.opInner(xdr.OperationResultTr.changeTrust(res)));
      } else if (op.type === 'invokeHostFunction') {
        // Known contracts are interpreted (their auth enforced); any other is not executed and returns void.
        const call = invocationOf(op.func);
        const run = call
          ? tryRun(contracts, call, { networkPassphrase, ledger: ledgerSeq, source: tx.source, auth: op.auth ?? [], recording: false })
          : { ok: true as const, value: null };
        const result = run.ok
          ? xdr.InvokeHostFunctionResult.invokeHostFunctionSuccess(sha256((run.value ?? xdr.ScVal.scvVoid()).toXDR()))
          : xdr.InvokeHostFunctionResult.invokeHostFunctionTrapped();
        if (!run.ok) ok = false;
        results.push(xdr.OperationResult.opInner(xdr.OperationResultTr.invokeHostFunction(result)));
      } else {
        ok = false;
        results.push(xdr.OperationResult.opNotSupported());
      }
    }
    return { ok, results, balances, lines, contracts };

    // A classic asset moves between trustlines; its issuer mints it by paying and burns what it is paid.
    function creditPayment(from: string, to: string, asset: string, amount: bigint): xdr.PaymentResult {
      const issuer = asset.slice(asset.indexOf(':') + 1);
      if (bal(to) === undefined) return xdr.PaymentResult.paymentNoDestination();
      if (from !== issuer && !linesFor(from).has(asset)) return xdr.PaymentResult.paymentSrcNoTrust();
      if (to !== issuer && !linesFor(to).has(asset)) return xdr.PaymentResult.paymentNoTrust();
      if (from !== issuer && linesFor(from).get(asset)! < amount) return xdr.PaymentResult.paymentUnderfunded();
      if (to !== issuer && linesFor(to).get(asset)! + amount > MAX_LIMIT) return xdr.PaymentResult.paymentLineFull();
      if (from !== issuer) linesFor(from).set(asset, linesFor(from).get(asset)! - amount);
      if (to !== issuer) linesFor(to).set(asset, linesFor(to).get(asset)! + amount);
      return xdr.PaymentResult.paymentSuccess();
    }
  }

  function closeLedger(): void {
    ledgerSeq += 1;
    closeTime = Math.max(closeTime, nowSeconds());
    const batch = queue;
    queue = [];
    let order = 0;
    for (const p of batch) {
      const inner = innerOf(p.env);
      const source = accounts.get(inner.source);
      const maxTime = Number(inner.timeBounds?.maxTime ?? 0);
      // Like core, transactions that became invalid while queued are dropped, never recorded.
      if (!source || BigInt(inner.sequence) !== source.sequence + 1n || (maxTime !== 0 && maxTime < closeTime)) continue;
      const isBump = p.env instanceof FeeBumpTransaction;
      const feeSource = isBump ? (p.env as FeeBumpTransaction).feeSource : inner.source;
      const fee = minFee(inner, isBump ? 1 : 0);
      accounts.get(feeSource)!.balance -= fee;
      source.sequence = BigInt(inner.sequence);
      const { ok, results: opResults, balances, lines, contracts } = applyOps(inner);
      if (ok) soroban = contracts;
      if (ok) for (const [a, b] of balances) accounts.get(a)!.balance = b;
      if (ok) for (const [a, l] of lines) trustlines.set(a, l);
      const R = xdr.TransactionResultResult;
      const IR = xdr.InnerTransactionResultResult;
      const result = isBump
        ? ok
          ? R.txFeeBumpInnerSuccess(
              new xdr.InnerTransactionResultPair({
                transactionHash: inner.hash(),
                result: new xdr.InnerTransactionResult({ feeCharged: i64(0n), result: IR.txSuccess(opResults), ext: new xdr.InnerTransactionResultExt(0) }),
              }),
            )
          : innerFailed(inner.hash(), 0n, IR.txFailed(opResults))
        : ok
          ? R.txSuccess(opResults)
          : R.txFailed(opResults);
      appliedOrder.push(p.hash);
      results.set(p.hash, {
        status: ok ? 'SUCCESS' : 'FAILED',
        ledger: ledgerSeq,
        createdAt: closeTime,
        applicationOrder: ++order,
        feeBump: isBump,
        envelopeXdr: p.xdr,
        resultXdr: txResult(fee, result).toXDR('base64'),
      });
    }
  }

  function decode(envelope: unknown): Envelope {
    if (typeof envelope !== 'string') throw new RpcFault(-32602, 'invalid parameters: transaction must be a base64 string');
    try {
      return TransactionBuilder.fromXDR(envelope, networkPassphrase);
    } catch {
      throw new RpcFault(-32602, 'invalid parameters: could not decode transaction envelope');
    }
  }

  function ledgerInfo() {
    return { latestLedger: ledgerSeq, latestLedgerCloseTime: String(closeTime) };
  }

  function sendTransaction(params: Record<string, unknown>) {
    const env = decode(params.transaction);
    const hash = env.hash().toString('hex');
    if (forcedStatus) {
      const status = forcedStatus;
      forcedStatus = undefined;
      return { status, hash, ...ledgerInfo() };
    }
    // Known (queued or in the kept history) is a duplicate; an applied one past the history is
    // validated again, and its used sequence number refuses it.
    const known = results.get(hash);
    if ((known && known.ledger >= oldestLedger()) || queue.some((p) => p.hash === hash)) return { status: 'DUPLICATE', hash, ...ledgerInfo() };
    const error = validate(env);
    if (error) return { status: 'ERROR', hash, errorResultXdr: error.toXDR('base64'), ...ledgerInfo() };
    queue.push({ env, hash, xdr: params.transaction as string });
    return { status: 'PENDING', hash, ...ledgerInfo() };
  }

  function getTransaction(params: Record<string, unknown>) {
    const hash = params.hash;
    if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/i.test(hash)) throw new RpcFault(-32602, 'invalid parameters: hash');
    const base = { txHash: hash.toLowerCase(), ...ledgerInfo(), oldestLedger: oldestLedger(), oldestLedgerCloseTime: '0' };
    const r = results.get(hash.toLowerCase());
    if (!r || r.ledger < oldestLedger()) return { status: 'NOT_FOUND', ...base };
    return {
      ...base,
      status: r.status,
      ledger: r.ledger,
      createdAt: String(r.createdAt),
      applicationOrder: r.applicationOrder,
      feeBump: r.feeBump,
      envelopeXdr: r.envelopeXdr,
      resultXdr: r.resultXdr,
      resultMetaXdr: new xdr.TransactionMeta(0, []).toXDR('base64'),
    };
  }

  // Pages of applied transactions in ledger order; the cursor is the position after the page.
  function getTransactions(params: Record<string, unknown>) {
    const pagination = (params.pagination ?? {}) as { cursor?: string; limit?: number };
    const limit = Math.min(Math.max(1, Number(pagination.limit ?? 10)), 200);
    let from: number;
    if (pagination.cursor !== undefined) {
      from = Number(pagination.cursor);
      if (!Number.isInteger(from) || from < 0) throw new RpcFault(-32602, 'invalid parameters: cursor');
    } else {
      const start = Number(params.startLedger);
      if (!Number.isInteger(start) || start < oldestLedger() || start > ledgerSeq) {
        throw new RpcFault(-32602, `invalid parameters: startLedger must be between the oldest ledger: ${oldestLedger()} and the latest ledger: ${ledgerSeq}`);
      }
      from = appliedOrder.findIndex((h) => results.get(h)!.ledger >= start);
      if (from < 0) from = appliedOrder.length;
    }
    const page = appliedOrder.slice(from, from + limit).filter((h) => results.get(h)!.ledger >= oldestLedger());
    return {
      transactions: page.map((h) => {
        const r = results.get(h)!;
        return {
          status: r.status,
          applicationOrder: r.applicationOrder,
          feeBump: r.feeBump,
          envelopeXdr: r.envelopeXdr,
          resultXdr: r.resultXdr,
          resultMetaXdr: new xdr.TransactionMeta(0, []).toXDR('base64'),
          ledger: r.ledger,
          createdAt: r.createdAt,
          txHash: h,
        };
      }),
      latestLedger: ledgerSeq,
      latestLedgerCloseTimestamp: closeTime,
      oldestLedger: oldestLedger(),
      oldestLedgerCloseTimestamp: 0,
      cursor: String(Math.min(appliedOrder.length, from + limit)),
    };
  }

  function getLedgerEntries(params: Record<string, unknown>) {
    const keys = params.keys;
    if (!Array.isArray(keys)) throw new RpcFault(-32602, 'invalid parameters: keys');
    const entries = [];
    for (const key of keys) {
      let lk: xdr.LedgerKey;
      try {
        lk = xdr.LedgerKey.fromXDR(String(key), 'base64');
      } catch {
        throw new RpcFault(-32602, 'invalid parameters: cannot decode ledger key');
      }
      if (lk.switch().name === 'trustline') {
        const line = lk.trustLine();
        const owner = StrKey.encodeEd25519PublicKey(line.accountId().ed25519());
        const arm = line.asset().switch().name;
        if (arm !== 'assetTypeCreditAlphanum4' && arm !== 'assetTypeCreditAlphanum12') continue;
        const alpha = arm === 'assetTypeCreditAlphanum4' ? line.asset().alphaNum4() : line.asset().alphaNum12();
        const code = alpha.assetCode().toString('ascii').replace(/\0+$/, '');
        const asset = `${code}:${StrKey.encodeEd25519PublicKey(alpha.issuer().ed25519())}`;
        const balance = trustlines.get(owner)?.get(asset);
        if (balance === undefined) continue;
        const entry = new xdr.TrustLineEntry({
          accountId: line.accountId(),
          asset: line.asset(),
          balance: i64(balance),
          limit: i64(MAX_LIMIT),
          flags: 1, // authorized
          ext: new xdr.TrustLineEntryExt(0),
        });
        entries.push({ key, xdr: xdr.LedgerEntryData.trustline(entry).toXDR('base64'), lastModifiedLedgerSeq: ledgerSeq });
        continue;
      }
      if (lk.switch().name !== 'account') continue;
      const accountId = lk.account().accountId();
      const address = StrKey.encodeEd25519PublicKey(accountId.ed25519());
      const state = accounts.get(address);
      if (!state) continue;
      const entry = new xdr.AccountEntry({
        accountId,
        balance: i64(state.balance),
        seqNum: i64(state.sequence),
        numSubEntries: linesOf(address).size,
        inflationDest: null,
        flags: 0,
        homeDomain: '',
        thresholds: Buffer.from([1, 0, 0, 0]),
        signers: [],
        ext: new xdr.AccountEntryExt(0),
      });
      entries.push({ key, xdr: xdr.LedgerEntryData.account(entry).toXDR('base64'), lastModifiedLedgerSeq: ledgerSeq });
    }
    return { entries, latestLedger: ledgerSeq };
  }

  // A plausible simulation: fixed resources and a fee that grows with the
  // payload, the return value the host function would produce, and a
  // source-account auth entry for contract creation.
  function simulateTransaction(params: Record<string, unknown>) {
    const env = decode(params.transaction);
    const tx = innerOf(env);
    const op = tx.operations[0];
    if (tx.operations.length !== 1 || op.type !== 'invokeHostFunction') {
      return { error: 'transaction must contain exactly one invokeHostFunction operation', latestLedger: ledgerSeq, events: [] };
    }
    const fn = op.func;
    let retval = xdr.ScVal.scvVoid();
    const auth: xdr.SorobanAuthorizationEntry[] = [];
    const kind = fn.switch().name;
    const call = invocationOf(fn);
    if (call) {
      // With auth entries they are enforced (signatures checked); without, recorded (the RPC's recording mode).
      const given = op.auth ?? [];
      const run = tryRun(cloneState(soroban), call, {
        networkPassphrase,
        ledger: ledgerSeq + 1,
        source: tx.source,
        auth: given,
        recording: given.length === 0,
      });
      if (!run.ok) return { error: `HostError: ${run.error}`, latestLedger: ledgerSeq, events: [] };
      if (run.value) retval = run.value;
    } else if (kind === 'hostFunctionTypeUploadContractWasm') {
      retval = xdr.ScVal.scvBytes(sha256(fn.wasm()));
    } else if (kind === 'hostFunctionTypeCreateContract' || kind === 'hostFunctionTypeCreateContractV2') {
      const args = kind === 'hostFunctionTypeCreateContract' ? fn.createContract() : fn.createContractV2();
      const preimage = xdr.HashIdPreimage.envelopeTypeContractId(
        new xdr.HashIdPreimageContractId({ networkId, contractIdPreimage: args.contractIdPreimage() }),
      );
      retval = Address.contract(sha256(preimage.toXDR())).toScVal();
      const authorized =
        kind === 'hostFunctionTypeCreateContract'
          ? xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeCreateContractHostFn(fn.createContract())
          : xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeCreateContractV2HostFn(fn.createContractV2());
      auth.push(
        new xdr.SorobanAuthorizationEntry({
          credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
          rootInvocation: new xdr.SorobanAuthorizedInvocation({ function: authorized, subInvocations: [] }),
        }),
      );
    }
    const size = fn.toXDR().length;
    const resourceFee = 20_000n + BigInt(size) * 10n;
    const data = new SorobanDataBuilder()
      .setResources(2_000_000, 2_000 + size, 1_000 + size)
      .setResourceFee(resourceFee)
      .build();
    return {
      transactionData: data.toXDR('base64'),
      minResourceFee: resourceFee.toString(),
      results: [{ auth: auth.map((a) => a.toXDR('base64')), xdr: retval.toXDR('base64') }],
      events: [],
      latestLedger: ledgerSeq,
    };
  }

  function dispatch(method: string, params: Record<string, unknown>): unknown {
    switch (method) {
      case 'getHealth':
        return { status: 'healthy', latestLedger: ledgerSeq, oldestLedger: oldestLedger(), ledgerRetentionWindow: retention ?? 17280 };
      case 'getNetwork':
        return { passphrase: networkPassphrase, protocolVersion: PROTOCOL_VERSION };
      case 'getLatestLedger':
        return {
          id: sha256(Buffer.from(String(ledgerSeq))).toString('hex'),
          sequence: ledgerSeq,
          protocolVersion: PROTOCOL_VERSION,
          closeTime: String(closeTime),
        };
      case 'getLedgerEntries':
        return getLedgerEntries(params);
      case 'simulateTransaction':
        return simulateTransaction(params);
      case 'sendTransaction':
        return sendTransaction(params);
      case 'getTransaction':
        return getTransaction(params);
      case 'getTransactions':
        return getTransactions(params);
      default:
        throw new RpcFault(-32601, `method not found: ${method}`);
    }
  }

  const server = await startJsonRpcServer(
    (method, params) => dispatch(method, params && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : {}),
    (err) => new RpcFault(-32603, err.message),
  );
  const interval = opts.ledgerIntervalMs ?? 200;
  const timer = interval > 0 ? setInterval(closeLedger, interval) : undefined;
  timer?.unref();

  return {
    url: server.url,
    port: server.port,
    calls: server.calls,
    async stop() {
      if (timer) clearInterval(timer);
      await server.close();
    },
    ledger: () => ({ sequence: ledgerSeq, closeTime }),
    account(address) {
      const a = accounts.get(address);
      return a && { ...a };
    },
    setAccount(address, state) {
      const a = accounts.get(address) ?? { balance: 0n, sequence: 0n };
      accounts.set(address, { balance: state.balance ?? a.balance, sequence: state.sequence ?? a.sequence });
    },
    trustline: (address, asset) => trustlines.get(address)?.get(asset),
    setTrustline(address, asset, balance) {
      const l = linesOf(address);
      l.set(asset, balance);
      trustlines.set(address, l);
    },
    closeLedger,
    nextSendStatus(status) {
      forcedStatus = status;
    },
    applied: () =>
      appliedOrder.map((h) => {
        const r = results.get(h)!;
        const inner = innerOf(TransactionBuilder.fromXDR(r.envelopeXdr, networkPassphrase));
        return { hash: h, source: inner.source, sequence: BigInt(inner.sequence), ledger: r.ledger, envelopeXdr: r.envelopeXdr };
      }),
    setRetention(ledgers) {
      retention = ledgers;
    },
    addToken(balances = {}) {
      const id = newContractId();
      soroban.tokens.set(id, { balances: new Map(Object.entries(balances)), allowances: new Map() });
      return id;
    },
    tokenBalance: (contract, address) => soroban.tokens.get(contract)?.balances.get(address) ?? 0n,
    addFeeForwarder() {
      const id = newContractId();
      soroban.forwarders.add(id);
      return id;
    },
  };
}
