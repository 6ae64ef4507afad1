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
import { encodeFunctionData, parseAbi } from 'viem';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount, type LocalAccount } from 'viem/accounts';
import { ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT } from '../../../../src/chains/evm/aa/canonical.js';
import {
  approvalTypedData,
  paymasterData,
  paymasterDeployment,
  relayerPaymasterAbi,
  STUB_SIGNATURE,
  type Window,
} from '../../../../src/chains/evm/aa/paymaster.js';
import { estimateGas } from '../../../../src/chains/evm/aa/simulate.js';
import { packUserOp, userOpHash, type UserOp } from '../../../../src/chains/evm/aa/userop.js';
import { createEvmRpc, type EvmRpc } from '../../../../src/chains/evm/rpc-client.js';
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

/** viem's dummy signature for Simple7702Account, used when estimating. */
export const DUMMY_SIGNATURE: Hex =
  '0xfffffffffffffffffffffffffffffff0000000000000000000000000000000007aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1c';
const accountAbi = parseAbi(['function execute(address target, uint256 value, bytes data)']);

export type GaslessKit = {
  rpc: EvmRpc;
  /** The paymaster of dev account `relayer` (its owner and signer) at EntryPoint v0.8, with 1 ETH deposited. */
  pm: Address;
  target: Address;
  /** A fresh 0-ETH EOA's first operation (factory 0x7702, signed authorization, dummy signatures), calling the target. */
  firstOp(): Promise<{ user: LocalAccount; op: UserOp }>;
  /** The relayer approves, then the user signs: the order the ERC-7677 flow has. */
  sign(op: UserOp, user: LocalAccount, w?: Window, approver?: LocalAccount): Promise<UserOp>;
  /** firstOp with estimated gas limits. */
  estimated(): Promise<{ user: LocalAccount; op: UserOp }>;
};

export async function gaslessKit(c: AaChain, relayer: number): Promise<GaslessKit> {
  const rpc = createEvmRpc([{ url: c.anvil.url, weight: 100 }], { retries: 0 });
  const target = await c.recorder();
  const owner = c.account(relayer).address;
  const d = paymasterDeployment(ENTRY_POINT_V08, owner, owner);
  await c.pub.waitForTransactionReceipt({ hash: await c.wallet(relayer).sendTransaction({ to: d.to, data: d.data }) });
  await c.pub.waitForTransactionReceipt({
    hash: await c.wallet(relayer).writeContract({ address: d.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: 10n ** 18n }),
  });
  const pm = d.address;
  const soon = (): Window => ({ validUntil: Math.floor(Date.now() / 1000) + 600, validAfter: 0 });
  const kit: GaslessKit = {
    rpc,
    pm,
    target,
    async firstOp() {
      const user = privateKeyToAccount(generatePrivateKey());
      const authorization = await user.signAuthorization!({ address: SIMPLE_7702_ACCOUNT, chainId: c.chain.id, nonce: 0 });
      const block = await c.pub.getBlock();
      const op: UserOp = {
        sender: user.address,
        nonce: 0n,
        factory: '0x7702',
        factoryData: '0x',
        authorization,
        callData: encodeFunctionData({ abi: accountAbi, functionName: 'execute', args: [target, 0n, '0x'] }),
        callGasLimit: 0n,
        verificationGasLimit: 0n,
        preVerificationGas: 0n,
        maxFeePerGas: block.baseFeePerGas! * 2n + 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        paymaster: pm,
        paymasterData: paymasterData(soon(), STUB_SIGNATURE),
        signature: DUMMY_SIGNATURE,
      };
      return { user, op };
    },
    async sign(op, user, w = soon(), approver = c.account(relayer)) {
      const typed = approvalTypedData(packUserOp(op), pm, c.chain.id, w);
      const approved = { ...op, paymasterData: paymasterData(w, await approver.signTypedData(typed)) };
      return { ...approved, signature: await user.sign!({ hash: userOpHash(approved, '0.8', c.chain.id) }) };
    },
    async estimated() {
      const { user, op } = await kit.firstOp();
      return { user, op: { ...op, ...(await estimateGas(rpc, op, '0.8')) } };
    },
  };
  return kit;
}
