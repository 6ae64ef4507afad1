import { z } from 'zod';

// The contract every key custody implements (src/signers/<type>/): a key that signs where it is kept.
// The service asks it for the public key once, then for signatures; it never asks for the private part.

export type Curve = 'secp256k1' | 'ed25519';

/**
 * Why a custody call did not give a signature. `unavailable` and `timeout` pass by themselves;
 * the others need someone to change the custody or the config. Either way the transaction waits.
 */
export type CustodyFault = 'unavailable' | 'timeout' | 'denied' | 'not_found' | 'wrong_key' | 'disabled' | 'rejected';

/** A custody's refusal or failure, in words that name no secret. */
export class CustodyError extends Error {
  constructor(
    readonly fault: CustodyFault,
    message: string,
  ) {
    super(message);
    this.name = 'CustodyError';
  }
}

export interface KeyCustody {
  readonly curve: Curve;
  /**
   * secp256k1: the 65-byte uncompressed point (0x04 ‖ x ‖ y); ed25519: the 32-byte key. Where the
   * config names the key (a public key, an address), a custody whose key differs throws `wrong_key`.
   */
  publicKey(signal: AbortSignal): Promise<Uint8Array>;
  /**
   * secp256k1: signs the 32-byte digest as it is (no hashing) and answers r ‖ s (64 bytes, either s);
   * ed25519: signs the message and answers the 64-byte signature.
   */
  sign(data: Uint8Array, signal: AbortSignal): Promise<Uint8Array>;
  /** Releases sessions or connections, if the custody holds any. */
  close?(): Promise<void>;
}

/** A secret in a signer's config: a literal, or the name of an environment variable holding it. */
export const secretValue = z.union([z.string().min(1), z.object({ type: z.enum(['env', 'plain']), value: z.string().min(1) }).strict()]);
export type SecretValue = z.infer<typeof secretValue>;

export interface OpenContext {
  /** The signer's id, for messages. */
  id: string;
  /** The curve the relayer's chain family signs with. */
  curve: Curve;
  /** The value of a secret; throws a CustodyError('rejected') naming the variable when it is unset. */
  secret(s: SecretValue): string;
  /** The folder relative paths in the config are read from. */
  baseDir: string;
}

/** One signer type: its config (the reference's field names), what it can sign, how it opens. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds types of every config shape.
export interface CustodyType<C = any> {
  type: string;
  curves: readonly Curve[];
  config: z.ZodType<C>;
  /** The config's fields that can be shown through the API (never a secret). */
  visible(config: C): Record<string, unknown>;
  open(config: C, ctx: OpenContext): KeyCustody | Promise<KeyCustody>;
}

/** The signer types offered, by type name (built at the composition root from src/signers/list.ts, then handed down). */
export type Custodies = ReadonlyMap<string, CustodyType>;

export const custodiesOf = (types: readonly CustodyType[]): Custodies => new Map(types.map((c) => [c.type, c]));
