// The ERC-4337 contracts every client expects at fixed addresses, and placing them on a chain that
// lacks them (anvil, the devnet) exactly as they were placed on public chains: a CREATE2 of the
// published creation code through the standard deterministic deployer, with the salt used there.
import { createRequire } from 'node:module';
import { concat, createPublicClient, pad, createWalletClient, getContractAddress, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/** Arachnid's deterministic deployer: calldata = salt (32 bytes) ‖ creation code; present on anvil and most chains. */
export const CREATE2_DEPLOYER: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';

export const ENTRY_POINT_V07: Address = '0x0000000071727De22E5E9d8BAf0edAc6f37da032';
export const ENTRY_POINT_V08: Address = '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108';
/** The EIP-7702 delegate of @account-abstraction/contracts 0.8 (viem's toSimple7702SmartAccount default). */
export const SIMPLE_7702_ACCOUNT: Address = '0xe6Cae83BdE06E4c305530e199D7217f42808555B';

/** v0.7's SimpleAccountFactory (viem's toSimpleSmartAccount default for EntryPoint 0.7). */
export const SIMPLE_ACCOUNT_FACTORY_V07: Address = '0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985';

export type CanonicalName = 'EntryPointV07' | 'EntryPointV08' | 'Simple7702Account' | 'SimpleAccountFactoryV07';

type Artifact = { abi: unknown[]; bytecode: Hex; deployedBytecode: Hex };

const require = createRequire(import.meta.url);
const artifact = (pkg: string, name: string): Artifact => require(`${pkg}/artifacts/${name}.json`) as Artifact;

/** The artifacts of the two releases, from npm: v0.7's package is installed under an alias. */
export const aaArtifact = (version: '0.7' | '0.8', name: string): Artifact =>
  artifact(version === '0.7' ? 'aa-contracts-v07' : '@account-abstraction/contracts', name);

// The salts of the canonical deployments (eth-infinitism's releases); the address check below
// proves each pairing with the creation code of the installed package.
const CANONICAL: { name: CanonicalName; address: Address; salt: Hex; code: () => Hex }[] = [
  {
    name: 'EntryPointV07',
    address: ENTRY_POINT_V07,
    salt: '0x90d8084deab30c2a37c45e8d47f49f2f7965183cb6990a98943ef94940681de3',
    code: () => aaArtifact('0.7', 'EntryPoint').bytecode,
  },
  {
    name: 'EntryPointV08',
    address: ENTRY_POINT_V08,
    salt: '0x0a59dbff790c23c976a548690c27297883cc66b4c67024f9117b0238995e35e9',
    code: () => aaArtifact('0.8', 'EntryPoint').bytecode,
  },
  {
    name: 'Simple7702Account',
    address: SIMPLE_7702_ACCOUNT,
    salt: '0x0000000000000000000000000000000000000000000000000000000000000000',
    code: () => aaArtifact('0.8', 'Simple7702Account').bytecode,
  },
  {
    name: 'SimpleAccountFactoryV07',
    address: SIMPLE_ACCOUNT_FACTORY_V07,
    salt: '0x0000000000000000000000000000000000000000000000000000000000000000',
    code: () => concat([aaArtifact('0.7', 'SimpleAccountFactory').bytecode, pad(ENTRY_POINT_V07, { size: 32 })]),
  },
];

/** Where the deterministic deployer puts `code` with `salt`. */
export const create2Address = (salt: Hex, code: Hex): Address => getContractAddress({ opcode: 'CREATE2', from: CREATE2_DEPLOYER, salt, bytecode: code });

/** The deployer call that creates `code` with `salt`: an ordinary transaction's data. */
export const create2Calldata = (salt: Hex, code: Hex): Hex => concat([salt, code]);

export function canonicalDeployments(): { name: CanonicalName; address: Address; salt: Hex; code: Hex }[] {
  return CANONICAL.map((c) => {
    const code = c.code();
    const at = create2Address(c.salt, code);
    if (at.toLowerCase() !== c.address.toLowerCase()) throw new Error(`${c.name}: the installed creation code deploys to ${at}, not ${c.address}`);
    return { name: c.name, address: c.address, salt: c.salt, code };
  });
}

/**
 * Places EntryPoint v0.7, v0.8, Simple7702Account and v0.7's SimpleAccountFactory at their canonical addresses on the chain at
 * `url`, paying with `privateKey` (a funded test key). Those already there are left alone, so it
 * can run at every start. Returns what it deployed.
 */
export async function placeCanonicalContracts(url: string, privateKey: Hex): Promise<CanonicalName[]> {
  const transport = http(url, { retryCount: 0 });
  const pub = createPublicClient({ transport });
  const wallet = createWalletClient({ transport, account: privateKeyToAccount(privateKey) });
  const chainId = await pub.getChainId();
  const chain = {
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  };
  if (!(await pub.getCode({ address: CREATE2_DEPLOYER }))) throw new Error(`no deterministic deployer at ${CREATE2_DEPLOYER} on ${url}`);
  const placed: CanonicalName[] = [];
  for (const d of canonicalDeployments()) {
    if (await pub.getCode({ address: d.address })) continue;
    const hash = await wallet.sendTransaction({ chain, to: CREATE2_DEPLOYER, data: create2Calldata(d.salt, d.code), gas: 8_000_000n });
    const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success' || !(await pub.getCode({ address: d.address })))
      throw new Error(`${d.name}: deployment ${hash} left no code at ${d.address}`);
    placed.push(d.name);
  }
  return placed;
}
