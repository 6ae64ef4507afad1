import { z } from 'zod';
import { urlText } from '../lib/validate.js';

// The one rule for RPC URLs, of networks and of relayers, from the config file and the API alike.
// As OpenZeppelin Relayer has it: http or https only (JSON-RPC is posted over HTTP), a weight from 0
// to 100 (absent or null: 100), a URL alone or a { url, weight } object. Ours besides: at most 20 per list.

/** An RPC endpoint of a network or a relayer, as kept and used. */
export type RpcEndpoint = {
  url: string;
  /** 0 to 100: healthy endpoints are tried in a random order weighted by it; those of weight 0 only after them. */
  weight: number;
};

export const DEFAULT_RPC_WEIGHT = 100;
export const MAX_RPC_URLS = 20;

const HTTP_URL = /^https?:\/\/\S+$/i;

/** Whether an http(s) URL has a host (other text is refused by HTTP_URL). */
function hasHost(s: string): boolean {
  if (!HTTP_URL.test(s)) return true;
  try {
    return new URL(s).host !== '';
  } catch {
    return false;
  }
}

/** An RPC URL: http(s), with a host. */
export const rpcUrl = urlText.regex(HTTP_URL, 'must be an http(s) URL').refine(hasHost, 'must be an http(s) URL');

const weightRange = 'must be an integer from 0 to 100';

// Its checks never stop the parse, so that in rpcEntry's union a { url, weight } object with a bad
// weight is told about the weight rather than that it is neither a URL nor an object.
const weight = z
  .unknown()
  .superRefine((w, ctx) => {
    if (w != null && !(Number.isInteger(w) && (w as number) >= 0 && (w as number) <= 100)) ctx.addIssue({ code: 'custom', message: weightRange });
  })
  .meta({
    type: ['integer', 'null'],
    minimum: 0,
    maximum: 100,
    default: DEFAULT_RPC_WEIGHT,
    description: '0 to 100 (absent or null: 100); endpoints of weight 0 are used only when the others fail.',
  });

/** An RPC endpoint as an object (GraphQL's RpcConfigInput, the spec's RpcConfig): what REST's relayer bodies are checked with. */
export const rpcConfig = z.object({ url: rpcUrl, weight: weight.optional() }).strict();

/** An RPC endpoint as the config file and the API take it: a URL, or a { url, weight } object. */
export const rpcEntry = z
  .union([rpcUrl, rpcConfig], { error: 'must be a URL or a { url, weight } object' })
  .transform(
    (u): RpcEndpoint =>
      typeof u === 'string' ? { url: u, weight: DEFAULT_RPC_WEIGHT } : { url: u.url, weight: (u.weight as number | null | undefined) ?? DEFAULT_RPC_WEIGHT },
  );

const tooMany = `must list at most ${MAX_RPC_URLS} URLs`;

/** A list of RPC endpoints (strings or objects); empty is allowed (a relayer's: none of its own). */
export const rpcEntries = z.array(rpcEntry).max(MAX_RPC_URLS, tooMany);

/** A list of RPC endpoints as objects only (what GraphQL's [RpcConfigInput] carries). */
export const rpcConfigs = z.array(rpcConfig).max(MAX_RPC_URLS, tooMany);

/** Why a network's list, once read, cannot be used; the config file and the API say the same. */
export const NO_RPC_URLS = 'must list at least one URL';
