// An anvil chain readied for gasless tests: viem clients, the ERC-4337 contracts at their canonical
// addresses, and the relayer's paymasters deployed and funded by a third party.
import { createPublicClient, createWalletClient, defineChain, http, type Chain, type HttpTransport, type PublicClient } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../src/chains/evm/anvil.js';
import { placeCanonicalContracts } from '../../src/chains/evm/aa/canonical.js';
import { type PaymasterDeployment, relayerPaymasterAbi } from '../../src/chains/evm/aa/paymaster.js';

/** Accounts 4 (places the contracts) and 3 (deploys and funds, 1 ETH each paymaster) of the devnet mnemonic. */
export async function gaslessAnvil(url: string, paymasters: PaymasterDeployment[]) {
  const chain = defineChain({
    id: 31337,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const transport = http(url, { retryCount: 0 });
  const pub: PublicClient<HttpTransport, Chain> = createPublicClient({ chain, transport, pollingInterval: 50 });
  const funder = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 4 });
  await placeCanonicalContracts(url, `0x${Buffer.from(funder.getHdKey().privateKey!).toString('hex')}`);
  const wallet = createWalletClient({ chain, transport, account: mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 3 }), pollingInterval: 50 });
  for (const d of paymasters) {
    await pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: d.to, data: d.data }) });
    await pub.waitForTransactionReceipt({
      hash: await wallet.writeContract({ address: d.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: 10n ** 18n }),
    });
  }
  return { chain, pub, wallet };
}
