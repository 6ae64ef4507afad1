import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  getBase64Decoder,
  getTransactionEncoder,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';

/** A base64 wire transaction of `instructions` with `feePayer`, unsigned. */
export function buildUnsigned(feePayer: string, instructions: Instruction[], blockhash: string): string {
  const message = appendTransactionMessageInstructions(
    instructions,
    setTransactionMessageLifetimeUsingBlockhash(
      { blockhash: blockhash as Blockhash, lastValidBlockHeight: 0n },
      setTransactionMessageFeePayer(address(feePayer), createTransactionMessage({ version: 0 })),
    ),
  );
  return getBase64Decoder().decode(getTransactionEncoder().encode(compileTransaction(message)));
}
