// SPL token facts the gasless fee needs: program ids, associated token accounts, the mint and
// account layouts, and the two instructions a sponsored transaction adds (create the relayer's
// token account when it has none, and TransferChecked of the fee).
import { AccountRole, address, getAddressDecoder, getAddressEncoder, getProgramDerivedAddress, type Address, type Instruction } from '@solana/kit';

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
export const TOKEN_PROGRAMS: ReadonlySet<string> = new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM]);
/** Bytes of an SPL token account (its rent is what creating one costs). */
export const TOKEN_ACCOUNT_SIZE = 165;
export const TRANSFER = 3;
export const TRANSFER_CHECKED = 12;
const ATA_CREATE = 0;
const ATA_CREATE_IDEMPOTENT = 1;
const SYSTEM_PROGRAM = '11111111111111111111111111111111';

/** The associated token account of `owner` for `mint` under `tokenProgram`. */
export async function ataOf(owner: string, mint: string, tokenProgram: string): Promise<Address> {
  const enc = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: address(ATA_PROGRAM),
    seeds: [enc.encode(address(owner)), enc.encode(address(tokenProgram)), enc.encode(address(mint))],
  });
  return pda;
}

/** Decimals of a mint account's data (both token programs share the base layout). */
export function mintDecimals(data: Uint8Array): number {
  if (data.length < 82) throw new Error('not a mint account');
  return data[44];
}

/** Mint, owner and amount of a token account's data. */
export function tokenAccount(data: Uint8Array): { mint: string; owner: string; amount: bigint } {
  if (data.length < TOKEN_ACCOUNT_SIZE) throw new Error('not a token account');
  const dec = getAddressDecoder();
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return { mint: dec.decode(data.subarray(0, 32)), owner: dec.decode(data.subarray(32, 64)), amount: view.getBigUint64(64, true) };
}

/** TransferChecked of `amount` from `source` (owned by `owner`, who signs) to `destination`. */
export function transferChecked(p: {
  tokenProgram: string;
  source: string;
  mint: string;
  destination: string;
  owner: string;
  amount: bigint;
  decimals: number;
}): Instruction {
  const data = new Uint8Array(10);
  data[0] = TRANSFER_CHECKED;
  new DataView(data.buffer).setBigUint64(1, p.amount, true);
  data[9] = p.decimals;
  return {
    programAddress: address(p.tokenProgram),
    accounts: [
      { address: address(p.source), role: AccountRole.WRITABLE },
      { address: address(p.mint), role: AccountRole.READONLY },
      { address: address(p.destination), role: AccountRole.WRITABLE },
      { address: address(p.owner), role: AccountRole.READONLY_SIGNER },
    ],
    data,
  };
}

/** Creates `owner`'s associated token account for `mint` if it has none, paid by `payer`. */
export function createAtaIdempotent(p: { payer: string; ata: string; owner: string; mint: string; tokenProgram: string }): Instruction {
  return {
    programAddress: address(ATA_PROGRAM),
    accounts: [
      { address: address(p.payer), role: AccountRole.WRITABLE_SIGNER },
      { address: address(p.ata), role: AccountRole.WRITABLE },
      { address: address(p.owner), role: AccountRole.READONLY },
      { address: address(p.mint), role: AccountRole.READONLY },
      { address: address(SYSTEM_PROGRAM), role: AccountRole.READONLY },
      { address: address(p.tokenProgram), role: AccountRole.READONLY },
    ],
    data: new Uint8Array([ATA_CREATE_IDEMPOTENT]),
  };
}

/** Whether compiled instruction data is an ATA Create or CreateIdempotent. */
export const isAtaCreate = (data: ArrayLike<number> | undefined): boolean =>
  !data || data.length === 0 || data[0] === ATA_CREATE || data[0] === ATA_CREATE_IDEMPOTENT;

/** The amount of TransferChecked or Transfer instruction data. */
export function transferAmount(data: ArrayLike<number> | undefined): bigint | undefined {
  if (!data || data.length < 9 || (data[0] !== TRANSFER && data[0] !== TRANSFER_CHECKED)) return undefined;
  let n = 0n;
  for (let i = 8; i >= 1; i--) n = (n << 8n) | BigInt(data[i]);
  return n;
}
