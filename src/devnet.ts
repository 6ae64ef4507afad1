import type { Config } from './config/load.js';
import { startAnvil } from './chains/evm/anvil.js';
import type { Logger } from './log.js';

/** The network name the default config gives its local chain; DEVNET points it at anvil. */
export const DEVNET_NETWORK = 'devnet';

/**
 * Starts anvil for the config's `devnet` EVM network and points that network at it, so a new
 * user can send a transaction right after `npm start`.
 */
export async function startDevnet(config: Config, port: number, log: Logger) {
  const network = config.networks.get(`evm:${DEVNET_NETWORK}`);
  if (!network) {
    log.warn('DEVNET is on but the config has no evm network named "devnet": no devnet started');
    return undefined;
  }
  const anvil = await startAnvil({ port, chainId: network.chainId }).catch((e: Error) => {
    if (!/in use/i.test(e.message)) throw e;
    log.warn({ port }, 'devnet port in use: starting anvil on a free port');
    return startAnvil({ port: 0, chainId: network.chainId });
  });
  network.rpcUrls = [{ url: anvil.url, weight: 100 }];
  log.info({ url: anvil.url, chainId: anvil.chainId }, 'devnet (anvil) started');
  return anvil;
}
