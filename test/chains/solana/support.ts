// Building Solana transactions the way a client of the relayer does: the relayer as fee payer,
// signed by every other signer, base64 wire format.
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  generateKeyPair,
  getAddressFromPublicKey,
  getBase64EncodedWireTransaction,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
} from '@solana/kit';

export const SOL = 1_000_000_000n;
export const SYSTEM = address('11111111111111111111111111111111');
export const COMPUTE_BUDGET = address('ComputeBudget111111111111111111111111111111');
/** All-zero bytes: "no blockhash yet", the relayer fills one in. */
export const NO_BLOCKHASH = '11111111111111111111111111111111' as Blockhash;

export type Party = { address: Address; keyPair: CryptoKeyPair };

export async function party(): Promise<Party> {
  const keyPair = await generateKeyPair();
  return { keyPair, address: await getAddressFromPublicKey(keyPair.publicKey) };
}

export function transferSol(from: Address, to: Address, amount: bigint): Instruction {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(4, amount, true);
  return {
    programAddress: SYSTEM,
    accounts: [
      { address: from, role: AccountRole.WRITABLE_SIGNER },
      { address: to, role: AccountRole.WRITABLE },
    ],
    data,
  };
}

export function setComputeUnitLimit(units: number): Instruction {
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: COMPUTE_BUDGET, data };
}

/** A base64 wire transaction with `feePayer` (unsigned) and the signatures of `signers`. */
export async function buildTx(feePayer: Address, instructions: Instruction[], blockhash: Blockhash, signers: CryptoKeyPair[] = []) {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash, lastValidBlockHeight: 0n }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = compileTransaction(message);
  return getBase64EncodedWireTransaction(signers.length ? await partiallySignTransaction(signers, tx) : tx);
}
