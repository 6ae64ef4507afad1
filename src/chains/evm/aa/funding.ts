// The life of a relayer's own paymaster (policy `user_operations.paymaster: {deploy: true, ...}`),
// per EntryPoint it serves: deployed once from the relayer's account, funded with `deposit`, topped
// up to `deposit` when the EntryPoint's balance of it falls below `min_deposit`. Every step is an
// ordinary transaction of the relayer, created as any send is (nonce, pricing, bumps, tracking,
// webhooks), and only after looking for evidence that it is not already done or under way.
import { encodeFunctionData, getAddress, parseAbi, type Address, type Hex } from 'viem';
import type { Relayer, TransactionStatus } from '../../../generated/prisma/client.js';
import { isDomainError } from '../../../core/domain-error.js';
import type { Runtime } from '../../../core/runtime.js';
import { sendTransaction } from '../../../core/transactions/service.js';
import { startLoop } from '../../../lib/loop.js';
import { evmContext, type EvmContext } from '../context.js';
import { readEvmPolicy } from '../request.js';
import { paymasterDeployment, relayerPaymasterAbi, type PaymasterDeployment } from './paymaster.js';
import { servedEntryPoints, type UserOperationsPolicy } from './policy.js';

const balanceOfAbi = parseAbi(['function balanceOf(address account) view returns (uint256)']);
/** The paymaster's deposit(): payable, it forwards the value to EntryPoint.depositTo(itself). */
export const DEPOSIT_CALL: Hex = encodeFunctionData({ abi: relayerPaymasterAbi, functionName: 'deposit' });

/**
 * The relayer's own paymaster at `entryPoint`: owner the relayer's account (the only one that
 * withdraws), signer the relayer's signer. An EVM relayer's address is its signer's (evmContext
 * loads no signer whose address differs), so both are `relayer.address`.
 */
export const relayerPaymaster = (relayer: Pick<Relayer, 'address'>, entryPoint: string): PaymasterDeployment =>
  paymasterDeployment(getAddress(entryPoint), getAddress(relayer.address), getAddress(relayer.address));

/** The paymaster a policy names at `entryPoint`: the relayer's own (deploy) or the given address. */
export const policyPaymaster = (relayer: Pick<Relayer, 'address'>, policy: UserOperationsPolicy, entryPoint: string): Address =>
  'address' in policy.paymaster ? getAddress(policy.paymaster.address) : relayerPaymaster(relayer, entryPoint).address;

export type PaymasterStatus = {
  entryPoint: Address;
  address: Address;
  /** It has code on chain. */
  deployed: boolean;
  /** Its deposit at the EntryPoint (balanceOf), in wei. */
  balance: bigint;
  /** Deployed and with a deposit to pay from (whether it covers an operation is the caller's comparison). */
  funded: boolean;
};

/** Where the relayer's own paymaster at `entryPoint` is, and whether it is deployed and funded, as the chain says now. */
export async function paymasterStatus(rt: Runtime, relayer: Relayer, entryPoint: string): Promise<PaymasterStatus> {
  const ctx = evmContext(rt, relayer);
  const { address } = relayerPaymaster(relayer, entryPoint);
  const [code, balance] = await Promise.all([hasCode(ctx, address), depositOf(ctx, entryPoint, address)]);
  return { entryPoint: getAddress(entryPoint), address, deployed: code, balance, funded: code && balance > 0n };
}

// ---- deciding (pure) ----

/** The policy's amounts, in wei. */
export type FundingTarget = { deposit: bigint; minDeposit: bigint | null };

/** What was seen before deciding: the chain, and the relayer's earlier deploy and deposit transactions. */
export type FundingSeen = {
  /** The EntryPoint has code: without it, a deployed paymaster could do nothing and a deposit would be lost. */
  entryPoint: boolean;
  /** The paymaster has code. */
  deployed: boolean;
  /** EntryPoint.balanceOf(paymaster). */
  balance: bigint;
  /** The statuses of the relayer's deploy transactions of this paymaster, attempt 0 first. */
  deploys: TransactionStatus[];
  /** The statuses of its deposit transactions to this paymaster, attempt 0 first. */
  deposits: TransactionStatus[];
};

export type FundingAction =
  | { kind: 'deploy'; attempt: number }
  | { kind: 'deposit'; attempt: number; amount: bigint }
  | { kind: 'wait'; why: string }
  | { kind: 'done' };

/** Ended without effect: a later attempt may be made. `confirmed` ended with it. */
const ENDED: TransactionStatus[] = ['failed', 'expired', 'canceled'];
const inFlight = (s: TransactionStatus) => s !== 'confirmed' && !ENDED.includes(s);

/**
 * The next step for one paymaster. Deploy when there is no code and no deploy under way; a
 * confirmed deploy that left no code is never repeated (the chain is read again; a person looks).
 * Deposit only once the paymaster has code (a deposit() call to an empty address would leave the
 * ETH there, out of the EntryPoint and of anyone's reach) and no deposit is under way: up to
 * `deposit` when the balance is below `min_deposit`; without `min_deposit`, once, when the
 * relayer never deposited and the balance is below `deposit`.
 */
export function planFunding(target: FundingTarget, seen: FundingSeen): FundingAction {
  if (!seen.entryPoint) return { kind: 'wait', why: 'no EntryPoint contract at its address on this chain' };
  if (!seen.deployed) {
    if (seen.deploys.some(inFlight)) return { kind: 'wait', why: 'its deploy transaction is under way' };
    if (seen.deploys.includes('confirmed')) return { kind: 'wait', why: 'a deploy transaction was confirmed but the chain shows no code there' };
    return { kind: 'deploy', attempt: seen.deploys.length };
  }
  if (seen.deposits.some(inFlight)) return { kind: 'wait', why: 'a deposit transaction is under way' };
  const amount = target.deposit - seen.balance;
  if (amount <= 0n) return { kind: 'done' };
  const due = target.minDeposit !== null ? seen.balance < target.minDeposit : !seen.deposits.includes('confirmed');
  return due ? { kind: 'deposit', attempt: seen.deposits.length, amount } : { kind: 'done' };
}

/**
 * The idempotency key of an attempt. Both the lookup of earlier attempts and their uniqueness rest
 * on it: the relayer's deploy and deposit transactions are recognised by these keys (through the
 * unique index of (relayer, key), so the lookup costs the same whatever the relayer's number of
 * transactions), and their `to` and `data` must be the paymaster's deploy or deposit() call. Two
 * instances deciding the same attempt at once send the same key: one row is written, the other
 * gets it back (or a conflict, when its amount differs), and nothing is sent twice.
 */
export const fundingKey = (paymaster: Address, kind: 'deploy' | 'deposit', attempt: number) => `paymaster:${paymaster.toLowerCase()}:${kind}:${attempt}`;

// ---- looking and acting (effects) ----

/** A relayer's `paymaster.deploy` policy as amounts, or null when it has none. */
export function fundingTarget(relayer: Relayer): { policy: UserOperationsPolicy; target: FundingTarget } | null {
  let policy: UserOperationsPolicy | undefined;
  try {
    policy = readEvmPolicy(relayer.policies).user_operations;
  } catch {
    return null;
  }
  if (!policy || !('deploy' in policy.paymaster)) return null;
  const pm = policy.paymaster;
  return { policy, target: { deposit: BigInt(pm.deposit), minDeposit: pm.min_deposit !== undefined ? BigInt(pm.min_deposit) : null } };
}

const hasCode = async (ctx: EvmContext, address: string) => {
  const code = await ctx.rpc.request<Hex>('eth_getCode', [address, 'latest']);
  return code !== '0x' && code !== '0x0';
};

async function depositOf(ctx: EvmContext, entryPoint: string, account: Address): Promise<bigint> {
  if (!(await hasCode(ctx, entryPoint))) return 0n;
  const data = encodeFunctionData({ abi: balanceOfAbi, functionName: 'balanceOf', args: [account] });
  return BigInt(await ctx.rpc.request<Hex>('eth_call', [{ to: entryPoint, data }, 'latest']));
}

/** The statuses of attempts 0, 1, ... of `kind`, up to the first attempt never made; rows under the key but with another call are not ours. */
async function attempts(rt: Runtime, relayerId: string, paymaster: Address, kind: 'deploy' | 'deposit', call: { to: string; data: string }) {
  const found: TransactionStatus[] = [];
  for (const chunk = 16; ; ) {
    const keys = Array.from({ length: chunk }, (_, i) => fundingKey(paymaster, kind, found.length + i));
    const rows = await rt.db.prisma.transaction.findMany({
      where: { relayerId, idempotencyKey: { in: keys } },
      select: { idempotencyKey: true, status: true, to: true, data: true },
    });
    const byKey = new Map(rows.map((r) => [r.idempotencyKey, r]));
    for (const key of keys) {
      const row = byKey.get(key);
      if (!row) return found;
      const ours = row.to?.toLowerCase() === call.to.toLowerCase() && (row.data ?? '0x').toLowerCase() === call.data.toLowerCase();
      // A row of someone else's under our key still takes the attempt's number; it is not a deploy or deposit.
      found.push(ours ? row.status : 'canceled');
    }
  }
}

export type FundingOutcome = { entryPoint: Address; paymaster: Address; action: FundingAction; transactionId?: string };

/**
 * One pass over the relayer's paymasters (one per EntryPoint it serves): looks (first the
 * database, then the chain, so an attempt that ends between the two is seen on chain) and makes
 * at most one transaction per paymaster. Safe to run at any time, on any number of instances.
 */
export async function fundPaymasters(rt: Runtime, relayer: Relayer): Promise<FundingOutcome[]> {
  const found = fundingTarget(relayer);
  if (!found || relayer.address === '') return [];
  const ctx = evmContext(rt, relayer);
  const out: FundingOutcome[] = [];
  for (const entryPoint of servedEntryPoints(found.policy)) {
    const d = relayerPaymaster(relayer, entryPoint);
    const deposit = { to: d.address, data: DEPOSIT_CALL };
    const [deploys, deposits] = await Promise.all([attempts(rt, relayer.id, d.address, 'deploy', d), attempts(rt, relayer.id, d.address, 'deposit', deposit)]);
    const [epCode, deployed, balance] = await Promise.all([hasCode(ctx, entryPoint), hasCode(ctx, d.address), depositOf(ctx, entryPoint, d.address)]);
    const action = planFunding(found.target, { entryPoint: epCode, deployed, balance, deploys, deposits });
    const outcome: FundingOutcome = { entryPoint: getAddress(entryPoint), paymaster: d.address, action };
    if (action.kind === 'deploy' || action.kind === 'deposit') {
      const input = action.kind === 'deploy' ? { to: d.to, data: d.data, value: 0n } : { to: deposit.to, data: deposit.data, value: action.amount };
      try {
        const tx = await sendTransaction(rt, relayer.id, input, fundingKey(d.address, action.kind, action.attempt));
        outcome.transactionId = tx.id;
        rt.log.info(
          {
            relayerId: relayer.id,
            entryPoint,
            paymaster: d.address,
            transactionId: tx.id,
            ...(action.kind === 'deposit' ? { amount: String(action.amount) } : {}),
          },
          `paymaster ${action.kind} sent`,
        );
      } catch (e) {
        // Another instance took this attempt with another amount: its transaction is the one.
        if (!isDomainError(e, 'conflict')) throw e;
      }
    }
    out.push(outcome);
  }
  return out;
}

/** How long after a pass a relayer's paymasters are looked at again: sooner while something is under way. */
export function nextLookMs(outcomes: FundingOutcome[], blocktimeMs: number): number {
  const busy = outcomes.some((o) => o.action.kind !== 'done');
  return busy ? Math.min(15_000, Math.max(1_000, blocktimeMs)) : Math.min(60_000, Math.max(2_000, 4 * blocktimeMs));
}

/**
 * Runs fundPaymasters for every EVM relayer with a `paymaster.deploy` policy that is not paused
 * or disabled, each again after nextLookMs (an error: after a minute). Every instance running
 * workers runs it; the keys make that safe.
 */
export function startPaymasterFunding(rt: Runtime, { tickMs = 1_000 } = {}) {
  const due = new Map<string, number>();
  return startLoop(
    async () => {
      const now = Date.now();
      // Only the relayers whose policy deploys (the database filters on the JSON path).
      const relayers = (
        await rt.db.prisma.relayer.findMany({
          where: { networkType: 'evm', paused: false, systemDisabled: false, policies: { path: ['user_operations', 'paymaster', 'deploy'], equals: true } },
        })
      ).filter((r) => fundingTarget(r) !== null && (due.get(r.id) ?? 0) <= now);
      await Promise.all(
        relayers.map(async (r) => {
          try {
            const outcomes = await fundPaymasters(rt, r);
            due.set(r.id, Date.now() + nextLookMs(outcomes, evmContext(rt, r).blocktimeMs));
            for (const o of outcomes)
              if (o.action.kind === 'wait') rt.log.debug({ relayerId: r.id, paymaster: o.paymaster, why: o.action.why }, 'paymaster funding waits');
          } catch (err) {
            due.set(r.id, Date.now() + 60_000);
            rt.log.warn({ err, relayerId: r.id }, 'paymaster funding failed; trying again in a minute');
          }
        }),
      );
      return false;
    },
    { idleMs: tickMs, onError: (err) => rt.log.error({ err }, 'paymaster funding loop error') },
  );
}
