import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './core/settings.js';
import { ANVIL_DEPLOYER_PRIVATE_KEY, startAnvil } from './chains/evm/anvil.js';
import { placeCanonicalContracts } from './chains/evm/aa/canonical.js';
import type { Logger } from './lib/log.js';

/** The network name the default config gives its local chain; DEVNET points it at anvil. */
export const DEVNET_NETWORK = 'devnet';

/**
 * Starts anvil for the config's `devnet` EVM network and points that network at it, so a new
 * user can send a transaction right after `npm start`. The chain is kept beside the database
 * (DATA_DIR/devnet-state.json), so the nonces and transactions the database remembers are still
 * on it after a restart.
 */
export async function startDevnet(config: Config, port: number, dataDir: string, log: Logger) {
  const network = config.networks.get(`evm:${DEVNET_NETWORK}`);
  if (!network) {
    log.warn('DEVNET is on but the config has no evm network named "devnet": no devnet started');
    return undefined;
  }
  await mkdir(dataDir, { recursive: true });
  const statePath = path.join(dataDir, 'devnet-state.json');
  const pidFile = path.join(dataDir, 'devnet.pid');
  await stopOrphan(pidFile, log);
  const anvil = await startAnvil({ port, chainId: network.chainId, statePath }).catch((e: Error) => {
    if (!/in use/i.test(e.message)) throw e;
    log.warn({ port }, 'devnet port in use: starting anvil on a free port');
    return startAnvil({ port: 0, chainId: network.chainId, statePath });
  });
  if (anvil.process.pid) await writeFile(pidFile, String(anvil.process.pid));
  network.rpcUrls = [{ url: anvil.url, weight: 100 }];
  log.info({ url: anvil.url, chainId: anvil.chainId }, 'devnet (anvil) started');
  // EntryPoint v0.7, v0.8, Simple7702Account and v0.7's SimpleAccountFactory where ERC-4337 clients
  // expect them (once: the chain is kept).
  try {
    const placed = await placeCanonicalContracts(anvil.url, ANVIL_DEPLOYER_PRIVATE_KEY);
    if (placed.length) log.info({ placed }, 'devnet: ERC-4337 contracts placed at their canonical addresses');
  } catch (e) {
    log.warn({ err: (e as Error).message }, 'devnet: the ERC-4337 contracts could not be placed; gasless calls will fail');
  }
  return anvil;
}

/**
 * The anvil of a previous run whose service was killed outright is still running: stop it (it
 * writes the chain state as it exits) before starting ours on the same state.
 */
async function stopOrphan(pidFile: string, log: Logger) {
  const pid = Number(await readFile(pidFile, 'utf8').catch(() => ''));
  if (!pid) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('anvil')) return;
  log.warn({ pid }, 'stopping the devnet left running by a previous run');
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
}
