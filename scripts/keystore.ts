// Create or inspect encrypted keystores for the relayer's local signers.
// Run as `npm run keystore -- <command> [options]`; see USAGE.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { getBase58Encoder } from '@solana/kit';
import { Keypair, StrKey } from '@stellar/stellar-base';
import { createLocalSigner, isValidSecp256k1Key, type SignerKind } from '../src/signers/index.js';
import { encryptKeystore, KeystoreError, readKeystoreFile, writeKeystoreFile } from '../src/signers/keystore.js';

const USAGE = `Usage:
  npm run keystore -- create --out <file> [--type evm|solana|stellar]
                              [--private-key-env VAR] [--force] [--scrypt-n N]
  npm run keystore -- address --in <file> [--type evm|solana|stellar]

create    Encrypt a private key into a V3 keystore file and print its address.
          Without --private-key-env a new random key is generated.
address   Decrypt a keystore file and print its address.

Options:
  --type              key type (default: evm)
  --private-key-env   name of an env var holding the key: 32-byte hex for any
                      type, an S... secret for stellar, or a base58 64-byte
                      keypair for solana
  --force             overwrite an existing --out file
  --scrypt-n          scrypt cost (power of two, default 262144)
  -h, --help          show this help

The passphrase is read from KEYSTORE_PASSPHRASE, or prompted for (without
echo) when running on a terminal.`;

class UsageError extends Error {}

const KINDS: readonly SignerKind[] = ['evm', 'solana', 'stellar'];

function parseKind(value: string | undefined): SignerKind {
  const kind = (value ?? 'evm') as SignerKind;
  if (!KINDS.includes(kind)) throw new UsageError(`--type must be one of ${KINDS.join(', ')}`);
  return kind;
}

// Input that arrived after the Enter ending the previous prompt (e.g. pasted).
let typedAhead = '';

function promptHidden(prompt: string): Promise<string> {
  const { stdin, stderr } = process;
  return new Promise((resolve, reject) => {
    let input = '';
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write('\n');
    };
    const onData = (chunk: string) => {
      const chars = [...chunk];
      for (let i = 0; i < chars.length; i++) {
        const ch = chars[i];
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          if (ch === '\r' && chars[i + 1] === '\n') i++;
          typedAhead = chars.slice(i + 1).join('');
          finish();
          return resolve(input);
        }
        if (ch === '\u0003') {
          finish();
          return reject(new Error('aborted'));
        }
        input = ch === '\u007f' || ch === '\b' ? input.slice(0, -1) : input + ch;
      }
    };
    stderr.write(prompt);
    stdin.setEncoding('utf8');
    stdin.setRawMode(true);
    stdin.on('data', onData);
    stdin.resume();
    if (typedAhead) onData(typedAhead);
  });
}

async function getPassphrase(confirm: boolean): Promise<string> {
  const fromEnv = process.env.KEYSTORE_PASSPHRASE;
  if (fromEnv) return fromEnv;
  if (!process.stdin.isTTY) {
    throw new UsageError('set KEYSTORE_PASSPHRASE or run on a terminal to be prompted');
  }
  const passphrase = await promptHidden('Keystore passphrase: ');
  if (!passphrase) throw new UsageError('passphrase must not be empty');
  if (confirm && (await promptHidden('Repeat passphrase: ')) !== passphrase) {
    throw new UsageError('passphrases do not match');
  }
  return passphrase;
}

function decodeSolanaKeypair(value: string): Uint8Array | undefined {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(getBase58Encoder().encode(value));
  } catch {
    return undefined;
  }
  if (bytes.length !== 64) return undefined;
  const seed = bytes.slice(0, 32);
  const expected = getBase58Encoder().encode(createLocalSigner(seed, 'solana').address);
  return Buffer.from(expected).equals(bytes.subarray(32)) ? seed : undefined;
}

// Error messages here name the variable, never its value.
function secretFromEnv(name: string, kind: SignerKind): Uint8Array {
  const value = process.env[name]?.trim();
  if (!value) throw new UsageError(`env var ${name} is not set`);
  const hex = value.replace(/^0x/, '');
  let secret: Uint8Array | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(hex)) secret = Buffer.from(hex, 'hex');
  else if (kind === 'stellar' && StrKey.isValidEd25519SecretSeed(value)) {
    secret = Keypair.fromSecret(value).rawSecretKey();
  } else if (kind === 'solana') secret = decodeSolanaKeypair(value);
  if (!secret || (kind === 'evm' && !isValidSecp256k1Key(secret))) {
    throw new UsageError(`env var ${name} does not hold a valid ${kind} private key`);
  }
  return new Uint8Array(secret);
}

function randomSecret(kind: SignerKind): Uint8Array {
  for (;;) {
    const secret = new Uint8Array(randomBytes(32));
    if (kind !== 'evm' || isValidSecp256k1Key(secret)) return secret;
  }
}

async function create(opts: Record<string, string | boolean | undefined>): Promise<void> {
  const out = opts.out;
  if (typeof out !== 'string') throw new UsageError('create requires --out <file>');
  const kind = parseKind(opts.type as string | undefined);
  const n = opts['scrypt-n'] === undefined ? undefined : Number(opts['scrypt-n']);
  if (n !== undefined && !(Number.isSafeInteger(n) && n > 1 && (n & (n - 1)) === 0)) {
    throw new UsageError('--scrypt-n must be a power of two');
  }

  const envName = opts['private-key-env'];
  const secret = typeof envName === 'string' ? secretFromEnv(envName, kind) : randomSecret(kind);
  const signer = createLocalSigner(secret, kind);
  const passphrase = await getPassphrase(true);

  const keystore = await encryptKeystore(secret, passphrase, {
    kdf: 'scrypt',
    n,
    address: signer.kind === 'evm' ? signer.address : undefined,
  });
  secret.fill(0);
  await mkdir(dirname(out), { recursive: true, mode: 0o700 });
  try {
    await writeKeystoreFile(out, keystore, { overwrite: opts.force === true });
  } catch (err) {
    // The only KeystoreError raised here is for an existing file.
    if (err instanceof KeystoreError) throw new UsageError(`${err.message} (use --force to overwrite)`);
    throw err;
  }
  console.log(`Wrote ${out}`);
  console.log(`Address (${kind}): ${signer.address}`);
}

async function address(opts: Record<string, string | boolean | undefined>): Promise<void> {
  const file = opts.in;
  if (typeof file !== 'string') throw new UsageError('address requires --in <file>');
  const kind = parseKind(opts.type as string | undefined);
  const secret = await readKeystoreFile(file, await getPassphrase(false));
  console.log(createLocalSigner(secret, kind).address);
  secret.fill(0);
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      in: { type: 'string' },
      type: { type: 'string' },
      'private-key-env': { type: 'string' },
      'scrypt-n': { type: 'string' },
      force: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    if (!values.help) process.exitCode = 1;
    return;
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  if (command === 'create') return create(values);
  if (command === 'address') return address(values);
  throw new UsageError(`unknown command: ${command}`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(`error: ${message}`);
  const code = (err as { code?: unknown }).code;
  if (err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
    console.error('run with --help for usage');
  }
  process.exitCode = 1;
});
