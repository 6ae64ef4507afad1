import { getAddress, type Address, type Hex } from 'viem';
import type { Relayer } from '../../generated/prisma/client.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import type { Accepted } from '../../core/transactions/pipeline.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family-spec.js';
import { TRANSFER_GAS, type EvmRequest } from './request.js';
import type { Runtime } from '../../core/runtime.js';
import { evmContext, EvmSetupError, type EvmContext } from './context.js';
import { revertReason } from './node-errors.js';
import { estimateGasWithMargin } from './fees.js';
import { maxPricePerGas, requestFees } from './pricing.js';
import { RpcError } from './rpc-client.js';
import { slot } from '../../core/state.js';
import { ExpiringMap } from '../../lib/expiring.js';
import type { AuthorizationJson } from './unsigned.js';

export { TRANSFER_GAS };

/** The normalised request kept on the row (`request`); the pipeline builds from it. */
export interface EvmPayload {
  to: string | null;
  value: string;
  data: string | null;
  /** The client's gas limit, else the estimate made at accept time; null: estimate before signing. */
  gasLimit: string | null;
  gasPrice: string | null;
  maxFeePerGas: string | null;
  maxPriorityFeePerGas: string | null;
  speed: EvmRequest['speed'] | null;
  validUntil: string;
  /** EIP-7702 authorizations to carry (a bundle's, src/chains/evm/aa): signed as a type-4 transaction. */
  authorizationList?: AuthorizationJson[];
}

export function evmContextOrRefuse(rt: Runtime, relayer: Relayer): EvmContext {
  try {
    return evmContext(rt, relayer);
  } catch (e) {
    if (e instanceof EvmSetupError) throw invalid(`relayer ${relayer.id} cannot send transactions: ${e.message}`);
    throw e;
  }
}

const fmt = (wei: bigint) => `${wei} wei`;

/**
 * The policy and chain checks of an EVM request (every refusal names its rule), and the row to
 * write. Also used by replace, which keeps the transaction's nonce.
 */
export async function acceptEvm(rt: Runtime, relayer: Relayer, req: EvmRequest): Promise<Accepted> {
  const ctx = evmContextOrRefuse(rt, relayer);
  const { policy } = ctx;
  const now = Date.now();

  if (req.validUntil && req.validUntil.getTime() <= now) throw invalid('valid_until: must be in the future');
  const validUntil = req.validUntil ?? new Date(now + DEFAULT_VALIDITY_MS);

  const to = req.to ? getAddress(req.to) : null;
  if (policy.whitelist_receivers && policy.whitelist_receivers.length > 0) {
    if (!to) throw invalid('to: contract creation is not allowed: the relayer has a whitelist_receivers policy');
    const allowed = policy.whitelist_receivers.some((a) => a.toLowerCase() === to.toLowerCase());
    if (!allowed) throw invalid(`to: ${to} is not in the relayer's whitelist_receivers policy`);
  }

  const explicit1559 = req.maxFeePerGas !== undefined;
  if (explicit1559 && !ctx.network.features.includes('eip1559')) {
    throw invalid(`max_fee_per_gas: network ${ctx.network.name} does not support EIP-1559 fees; use gas_price`);
  }
  const cap = policy.gas_price_cap;
  if (cap !== undefined) {
    if (req.gasPrice !== undefined && req.gasPrice > cap) throw invalid(`gas_price: ${fmt(req.gasPrice)} exceeds the relayer's gas_price_cap of ${fmt(cap)}`);
    if (req.maxFeePerGas !== undefined && req.maxFeePerGas > cap) {
      throw invalid(`max_fee_per_gas: ${fmt(req.maxFeePerGas)} exceeds the relayer's gas_price_cap of ${fmt(cap)}`);
    }
  }

  const data = req.data && req.data !== '0x' ? (req.data.toLowerCase() as Hex) : null;
  let gasLimit: bigint | null = req.gasLimit ?? null;
  if (gasLimit === null) {
    if (policy.gas_limit_estimation === false) {
      if (data || !to) throw invalid("gas_limit: required, because the relayer's gas_limit_estimation policy is off");
      gasLimit = TRANSFER_GAS;
    } else {
      try {
        gasLimit =
          to && !data && !(await hasCode(rt, ctx, to))
            ? // What eth_estimateGas answers for a plain transfer to an account without code, without asking.
              (TRANSFER_GAS * 11n + 9n) / 10n
            : await estimateGasWithMargin(ctx.rpc, { from: relayer.address as Address, to: to ?? undefined, data: data ?? undefined, value: req.value });
      } catch (e) {
        if (e instanceof RpcError) throw invalid(`gas_limit: estimation failed: ${revertReason(e).replace(/^execution reverted: (?=insufficient)/i, '')}`);
        // The network is unreachable: the pipeline estimates before signing instead.
        rt.log.warn({ relayerId: relayer.id, err: (e as Error).message }, 'gas estimation deferred: network unreachable');
      }
    }
  }

  const speed = req.gasPrice !== undefined || explicit1559 ? null : (req.speed ?? 'fast');
  if (policy.min_balance !== undefined) {
    let balance: bigint;
    let price: bigint;
    try {
      [balance, price] = await Promise.all([
        ctx.rpc.request<Hex>('eth_getBalance', [relayer.address, 'pending']).then(BigInt),
        requestFees(ctx, {
          gasPrice: req.gasPrice?.toString(),
          maxFeePerGas: req.maxFeePerGas?.toString(),
          maxPriorityFeePerGas: req.maxPriorityFeePerGas?.toString(),
          speed,
        }).then(maxPricePerGas),
      ]);
    } catch {
      throw unavailable("min_balance: the relayer's balance cannot be read right now (network unreachable); try again");
    }
    const after = balance - req.value - (gasLimit ?? TRANSFER_GAS) * price;
    if (after < policy.min_balance) {
      throw invalid(
        `min_balance: the relayer's balance after this transaction (${fmt(after < 0n ? 0n : after)}) would fall below its min_balance policy of ${fmt(policy.min_balance)}`,
      );
    }
  }

  const payload: EvmPayload = {
    to,
    value: req.value.toString(),
    data,
    gasLimit: gasLimit?.toString() ?? null,
    gasPrice: req.gasPrice?.toString() ?? null,
    maxFeePerGas: req.maxFeePerGas?.toString() ?? null,
    maxPriorityFeePerGas: req.maxPriorityFeePerGas?.toString() ?? null,
    speed,
    validUntil: validUntil.toISOString(),
  };
  return {
    data: {
      from: relayer.address,
      to,
      value: payload.value,
      data,
      gasLimit,
      gasPrice: payload.gasPrice,
      maxFeePerGas: payload.maxFeePerGas,
      maxPriorityFeePerGas: payload.maxPriorityFeePerGas,
      speed,
      validUntil,
    },
    request: payload as never,
    takesNonce: true,
  };
}

export const readPayload = (request: unknown) => request as EvmPayload;

// Whether an address holds code, per chain, for a few seconds: a plain transfer to an
// account without code needs no gas estimate. A cache only; a miss asks the chain.
const CODE_TTL_MS = 5_000;
const CODE_CACHE = slot('evm code cache', () => new ExpiringMap<string, Promise<boolean>>(CODE_TTL_MS));

function hasCode(rt: Runtime, ctx: EvmContext, address: string): Promise<boolean> {
  const cache = rt.state(CODE_CACHE);
  const key = `${ctx.chainId}:${address.toLowerCase()}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const has = ctx.rpc.request<Hex>('eth_getCode', [address, 'latest']).then((code) => code !== '0x' && code !== '0x0');
  cache.set(key, has);
  has.catch(() => cache.delete(key));
  return has;
}
