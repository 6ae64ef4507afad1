// A local stand-in for a Solana RPC node. Transactions really execute in an
// in-process LiteSVM; the stand-in adds what LiteSVM has no notion of: slots
// advancing on a timer, block heights, blockhash expiry, and commitment levels
// (processed -> confirmed -> finalized) for getSignatureStatuses.
import {
  address as toAddress,
  getBase58Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports,
  type Transaction,
} from '@solana/kit';
import { FailedTransactionMetadata, LiteSVM } from 'litesvm';
import { RpcFault, startJsonRpcServer } from './jsonrpc-server.js';

export type SolanaRpcStub = {
  url: string;
  port: number;
  svm: LiteSVM;
  stop(): Promise<void>;
  slot(): number;
  blockHeight(): number;
  /** Advances `n` slots at once (as if the timer had fired n times). */
  advance(n?: number): void;
  /** Names of the methods called so far. */
  calls: string[];
  /**
   * While set, sendTransaction answers with the signature but the transaction never reaches a
   * leader (as a node that drops what it cannot forward): nothing executes, nothing lands.
   */
  dropSends: boolean;
  /** Every transaction that executed on the chain (landed), in order, with its wire bytes (base64). */
  executed: { signature: string; wire: string }[];
};

export type SolanaStubOptions = {
  airdrops: { address: string; lamports: bigint }[];
  /** Slot interval; 0 disables the timer (use advance()). Default 100ms. */
  slotMs?: number;
  /** Blocks a blockhash stays valid for. Default 20 (real clusters: 150). */
  blockhashLifetime?: number;
  /** Slots after landing at which a transaction is confirmed / finalized. Defaults 1 / 3. */
  confirmedAfter?: number;
  finalizedAfter?: number;
};

const LAMPORTS_PER_SIGNATURE = 5000;

// Variant names of LiteSVM's fieldless error enums, in declaration order
// (they are const enums, so only the numbers exist at runtime).
const TX_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
];
const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
];

/** LiteSVM's error objects -> the JSON shape Solana RPC uses for `err`. */
function errorJson(err: ReturnType<FailedTransactionMetadata['err']>): unknown {
  if (typeof err === 'number') return TX_ERRORS[err] ?? `TransactionError(${err})`;
  const e = err as unknown as Record<string, unknown>;
  if (typeof e.err === 'function') {
    const inner = (e.err as () => unknown)();
    const detail =
      typeof inner === 'number'
        ? (INSTRUCTION_ERRORS[inner] ?? `InstructionError(${inner})`)
        : inner && typeof inner === 'object' && 'code' in inner
          ? { Custom: (inner as { code: number }).code }
          : { BorshIoError: String((inner as { msg?: string })?.msg ?? '') };
    return { InstructionError: [e.index, detail] };
  }
  if ('accountIndex' in e) return { [err.constructor.name.replace(/^TransactionError/, '')]: { account_index: e.accountIndex } };
  if ('index' in e) return { DuplicateInstruction: e.index };
  return String(err);
}

export async function startSolanaRpc(opts: SolanaStubOptions): Promise<SolanaRpcStub> {
  const lifetime = opts.blockhashLifetime ?? 20;
  const confirmedAfter = opts.confirmedAfter ?? 1;
  const finalizedAfter = opts.finalizedAfter ?? 3;
  const svm = new LiteSVM();
  for (const a of opts.airdrops) svm.airdrop(toAddress(a.address), lamports(a.lamports));

  let slot = Number(svm.getClock().slot);
  let height = 1;
  let lastValidBlockHeight = height + lifetime;
  const landed = new Map<string, { slot: number; err: unknown }>();
  const b58 = getBase58Decoder();
  const stub = { dropSends: false, executed: [] } as unknown as SolanaRpcStub;

  function advance(n = 1): void {
    for (let i = 0; i < n; i++) {
      slot += 1;
      height += 1;
      svm.warpToSlot(BigInt(slot));
      if (height > lastValidBlockHeight) {
        svm.expireBlockhash();
        lastValidBlockHeight = height + lifetime;
      }
    }
  }

  function heightAt(commitment: unknown): number {
    if (commitment === 'finalized') return Math.max(0, height - finalizedAfter);
    if (commitment === 'confirmed') return Math.max(0, height - confirmedAfter);
    return height;
  }

  const ctx = () => ({ context: { slot } });
  const config = (v: unknown) => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

  function decodeWire(wire: unknown, encoding: unknown): Transaction {
    if (encoding !== 'base64') throw new RpcFault(-32602, 'invalid params: only base64 encoding is supported by this stand-in');
    if (typeof wire !== 'string') throw new RpcFault(-32602, 'invalid params: transaction must be a string');
    try {
      return getTransactionDecoder().decode(getBase64Encoder().encode(wire));
    } catch {
      throw new RpcFault(-32602, 'invalid transaction: failed to deserialize');
    }
  }

  function signatureOf(tx: Transaction): string {
    const first = Object.values(tx.signatures)[0];
    if (!first || Object.values(tx.signatures).some((s) => !s)) {
      throw new RpcFault(-32003, 'Transaction signature verification failure');
    }
    return b58.decode(first);
  }

  function rejectFailure(r: FailedTransactionMetadata): never {
    const err = errorJson(r.err());
    if (err === 'SignatureFailure') throw new RpcFault(-32003, 'Transaction signature verification failure');
    throw new RpcFault(-32002, `Transaction simulation failed: ${typeof err === 'string' ? err : JSON.stringify(err)}`, {
      err,
      logs: r.meta().logs(),
      accounts: null,
      unitsConsumed: Number(r.meta().computeUnitsConsumed()),
    });
  }

  function blockhashOf(tx: Transaction): string | undefined {
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    return 'lifetimeToken' in message ? String(message.lifetimeToken) : undefined;
  }

  function sendTransaction(params: unknown[]): string {
    const cfg = config(params[1]);
    const tx = decodeWire(params[0], cfg.encoding ?? 'base58');
    const signature = signatureOf(tx);
    if (landed.has(signature)) {
      // As a real node: preflight refuses a transaction already processed while its blockhash is
      // recent, and one whose blockhash is gone as BlockhashNotFound; without preflight the
      // node just answers the signature (the leader drops the duplicate).
      if (cfg.skipPreflight === true) return signature;
      const err = blockhashOf(tx) === svm.latestBlockhash() ? 'AlreadyProcessed' : 'BlockhashNotFound';
      throw new RpcFault(-32002, `Transaction simulation failed: ${err}`, { err, logs: [], accounts: null, unitsConsumed: 0 });
    }
    if (stub.dropSends) return signature;
    if (cfg.skipPreflight !== true) {
      const sim = svm.simulateTransaction(tx);
      if (sim instanceof FailedTransactionMetadata) rejectFailure(sim);
    }
    const result = svm.sendTransaction(tx);
    // Only transactions that got as far as execution land (and pay fees);
    // signature, blockhash and fee-payer failures are dropped by the cluster.
    if (svm.getTransaction(signature as Parameters<LiteSVM['getTransaction']>[0]) !== null) {
      landed.set(signature, { slot, err: result instanceof FailedTransactionMetadata ? errorJson(result.err()) : null });
      stub.executed.push({ signature, wire: String(params[0]) });
    }
    return signature;
  }

  function getSignatureStatuses(params: unknown[]) {
    const sigs = params[0];
    if (!Array.isArray(sigs)) throw new RpcFault(-32602, 'invalid params: expected an array of signatures');
    return {
      ...ctx(),
      value: sigs.map((s) => {
        const rec = landed.get(String(s));
        if (!rec) return null;
        const depth = slot - rec.slot;
        const confirmationStatus = depth >= finalizedAfter ? 'finalized' : depth >= confirmedAfter ? 'confirmed' : 'processed';
        return {
          slot: rec.slot,
          confirmations: confirmationStatus === 'finalized' ? null : depth,
          err: rec.err,
          status: rec.err ? { Err: rec.err } : { Ok: null },
          confirmationStatus,
        };
      }),
    };
  }

  function getFeeForMessage(params: unknown[]) {
    let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
    try {
      message = getCompiledTransactionMessageDecoder().decode(getBase64Encoder().encode(String(params[0])));
    } catch {
      throw new RpcFault(-32602, 'invalid params: message');
    }
    const valid = 'lifetimeToken' in message && message.lifetimeToken === svm.latestBlockhash();
    return { ...ctx(), value: valid ? LAMPORTS_PER_SIGNATURE * message.header.numSignerAccounts : null };
  }

  function simulateTransaction(params: unknown[]) {
    const cfg = config(params[1]);
    const tx = decodeWire(params[0], cfg.encoding ?? 'base58');
    const sim = svm.simulateTransaction(tx);
    const failed = sim instanceof FailedTransactionMetadata;
    const meta = sim.meta();
    return {
      ...ctx(),
      value: {
        err: failed ? errorJson(sim.err()) : null,
        logs: meta.logs(),
        accounts: null,
        unitsConsumed: Number(meta.computeUnitsConsumed()),
        returnData: null,
      },
    };
  }

  function dispatch(method: string, params: unknown[]): unknown {
    switch (method) {
      case 'getHealth':
        return 'ok';
      case 'getSlot':
        return slot;
      case 'getBlockHeight':
        return heightAt(config(params[0]).commitment);
      case 'getLatestBlockhash':
        return { ...ctx(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight } };
      case 'isBlockhashValid':
        return { ...ctx(), value: params[0] === svm.latestBlockhash() };
      case 'getBalance':
        return { ...ctx(), value: Number(svm.getBalance(toAddress(String(params[0]))) ?? 0n) };
      case 'getFeeForMessage':
        return getFeeForMessage(params);
      case 'sendTransaction':
        return sendTransaction(params);
      case 'simulateTransaction':
        return simulateTransaction(params);
      case 'getSignatureStatuses':
        return getSignatureStatuses(params);
      case 'getAccountInfo': {
        const acc = svm.getAccount(toAddress(String(params[0])));
        if (!acc?.exists || (acc.lamports === 0n && acc.data.length === 0)) return { ...ctx(), value: null };
        const data = Buffer.from(acc.data).toString('base64');
        return {
          ...ctx(),
          value: {
            owner: acc.programAddress,
            lamports: Number(acc.lamports),
            data: [data, 'base64'],
            executable: acc.executable,
            rentEpoch: 0,
            space: acc.data.length,
          },
        };
      }
      case 'getMinimumBalanceForRentExemption':
        return Number(svm.minimumBalanceForRentExemption(BigInt(Number(params[0]) || 0)));
      default:
        throw new RpcFault(-32601, `Method not found: ${method}`);
    }
  }

  const server = await startJsonRpcServer(
    (method, params) => dispatch(method, Array.isArray(params) ? params : []),
    (err) => new RpcFault(-32602, `invalid params: ${err.message}`),
  );
  const slotMs = opts.slotMs ?? 100;
  const timer = slotMs > 0 ? setInterval(() => advance(), slotMs) : undefined;
  timer?.unref();

  Object.assign(stub, {
    url: server.url,
    port: server.port,
    svm,
    calls: server.calls,
    slot: () => slot,
    blockHeight: () => height,
    advance,
    async stop() {
      if (timer) clearInterval(timer);
      await server.close();
    },
  });
  return stub;
}
