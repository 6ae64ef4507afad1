// A chain with the ERC-4337 contracts in place, for the gasless tests.
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Address,
  type Chain,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { mnemonicToAccount, type LocalAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC, startAnvil, type AnvilInstance } from '../../../../src/chains/evm/anvil.js';
import { placeCanonicalContracts } from '../../../../src/chains/evm/aa/canonical.js';

/**
 * A contract whose code stores its caller in slot 0, nothing else: the target of test operations,
 * which shows who called it (runtime CALLER PUSH0 SSTORE STOP; the init code returns it).
 */
export const CALLER_RECORDER_INIT: Hex = '0x63335f55005f526004601cf3';

export type AaChain = {
  anvil: AnvilInstance;
  chain: Chain;
  pub: PublicClient<HttpTransport, Chain>;
  /** A wallet client of anvil's dev account `index`. */
  wallet(index: number): WalletClient<HttpTransport, Chain, LocalAccount>;
  account(index: number): LocalAccount;
  /** Deploys the caller recorder; its address. */
  recorder(): Promise<Address>;
};

export async function startAaChain(chainId = 31337): Promise<AaChain> {
  const anvil = await startAnvil({ chainId, accounts: 5 });
  const chain = defineChain({
    id: chainId,
    name: `anvil ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.url] } },
  });
  const transport = http(anvil.url, { retryCount: 0 });
  const pub = createPublicClient({ chain, transport, pollingInterval: 50 });
  const account = (index: number) => mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: index });
  const wallet = (index: number) => createWalletClient({ chain, transport, account: account(index), pollingInterval: 50 });
  const key = `0x${Buffer.from(account(4).getHdKey().privateKey!).toString('hex')}` as Hex;
  await placeCanonicalContracts(anvil.url, key);
  return {
    anvil,
    chain,
    pub,
    wallet,
    account,
    async recorder() {
      const hash = await wallet(4).sendTransaction({ data: CALLER_RECORDER_INIT });
      const r = await pub.waitForTransactionReceipt({ hash });
      return r.contractAddress!;
    },
  };
}
