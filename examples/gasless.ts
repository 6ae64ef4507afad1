// The README's gasless EVM call (section "Gasless EVM"): KEY=$(cat data/api-key) npx tsx examples/gasless.ts
import { createPublicClient, http } from 'viem';
import { anvil } from 'viem/chains';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createBundlerClient, toSimple7702SmartAccount } from 'viem/account-abstraction';

const client = createPublicClient({ chain: anvil, transport: http('http://127.0.0.1:8545') });
const owner = privateKeyToAccount(generatePrivateKey());
const account = await toSimple7702SmartAccount({ client, owner });
const bundler = createBundlerClient({
  account,
  client,
  paymaster: true, // pm_getPaymasterStubData / pm_getPaymasterData on the same URL
  transport: http('http://localhost:8080/api/v1/relayers/devnet-relayer/bundler', {
    fetchOptions: { headers: { Authorization: `Bearer ${process.env.KEY}` } },
  }),
});
// The EOA delegates to Simple7702Account in the same transaction (EIP-7702; its first nonce is 0).
const authorization = await owner.signAuthorization({ address: account.authorization.address, chainId: anvil.id, nonce: 0 });
const hash = await bundler.sendUserOperation({ authorization, calls: [{ to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', data: '0x' }] });
const { success, receipt } = await bundler.waitForUserOperationReceipt({ hash });
console.log(success, receipt.transactionHash, await client.getBalance({ address: account.address })); // true 0x… 0n
