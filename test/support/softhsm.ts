import { execFileSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// SoftHSM tokens for the pkcs11 signer's tests: a real PKCS#11 module (Debian's softhsm2) and OpenSC's
// pkcs11-tool to make keys in it, installed here when missing (as scripts/chromium.mjs does for Chromium).
//
// The module is loaded in the test process and reads SOFTHSM2_CONF, and the list of tokens, when it is
// C_Initialize'd, so: all tokens of a process live in one temp folder this file makes (SOFTHSM2_CONF is
// set once, before the module is first opened), and tokens made after a custody opened the module are seen
// only once every custody on it has closed (the signer then finalizes the module and initializes it again).

export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const TOOLS = ['pkcs11-tool', 'softhsm2-util'];

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, tool)));
}

/** Installs softhsm2 and opensc with apt-get when the module or the tools are missing. */
export function ensureSoftHsm(): void {
  if (existsSync(SOFTHSM_MODULE) && TOOLS.every(onPath)) return;
  const root = process.getuid?.() === 0;
  const run = (args: string[]) =>
    execFileSync(root ? args[0] : 'sudo', root ? args.slice(1) : args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const install = () => run(['apt-get', 'install', '-y', '-q', 'softhsm2', 'opensc']);
  console.log(`${SOFTHSM_MODULE} or pkcs11-tool is missing: installing Debian's softhsm2 and opensc for the pkcs11 signer's tests`);
  try {
    install();
  } catch {
    // A fresh machine's package lists may be empty or stale.
    run(['apt-get', 'update', '-q']);
    install();
  }
}

let home: { dir: string; previousConf: string | undefined; tokens: number } | undefined;

function softHsmHome(): string {
  if (!home) {
    const dir = mkdtempSync(path.join(tmpdir(), 'relayer-softhsm-'));
    const conf = path.join(dir, 'softhsm2.conf');
    writeFileSync(conf, `directories.tokendir = ${path.join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`);
    mkdirSync(path.join(dir, 'tokens'));
    home = { dir, previousConf: process.env.SOFTHSM2_CONF, tokens: 0 };
    process.env.SOFTHSM2_CONF = conf;
  }
  return home.dir;
}

export type TokenCurve = 'secp256k1' | 'ed25519';

export interface TokenKey {
  label: string;
  /** CKA_ID as hex. */
  id: string;
  /** secp256k1: the 65-byte uncompressed point; ed25519: the 32-byte key, as pkcs11-tool reads them. */
  publicKey: Uint8Array;
}

export interface Token {
  label: string;
  pin: string;
  soPin: string;
  /** The slot ID SoftHSM gave the token. */
  slot: number;
  /** Makes a key pair on the token (private and public objects with this label and id). */
  addKey(curve: TokenCurve, label: string, id?: string): TokenKey;
  /** Deletes the key pair with this id (as another process would). */
  deleteKey(id: string): void;
  /** Deletes the token; the last one deleted removes the temp folder and restores SOFTHSM2_CONF. */
  cleanup(): void;
}

export function createToken({ label, pin, soPin = '87654321' }: { label: string; pin: string; soPin?: string }): Token {
  ensureSoftHsm();
  const dir = softHsmHome();
  const env = process.env;
  const out = execFileSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', soPin], { env, encoding: 'utf8' });
  const slot = Number(/reassigned to slot (\d+)/.exec(out)?.[1]);
  if (!Number.isSafeInteger(slot)) throw new Error(`softhsm2-util did not say which slot token ${label} is in: ${out}`);
  if (home) home.tokens++;
  const ids = new Set<string>();
  const freeId = () => {
    let n = 1;
    while (ids.has(n.toString(16).padStart(2, '0'))) n++;
    return n.toString(16).padStart(2, '0');
  };
  let removed = false;

  return {
    label,
    pin,
    soPin,
    slot,
    addKey(curve, keyLabel, id = freeId()) {
      ids.add(id);
      const tool = ['--module', SOFTHSM_MODULE, '--token-label', label, '--login', '--pin', pin];
      const keyType = curve === 'secp256k1' ? 'EC:secp256k1' : 'EC:edwards25519';
      execFileSync('pkcs11-tool', [...tool, '--keypairgen', '--key-type', keyType, '--label', keyLabel, '--id', id], { env, stdio: 'pipe' });
      // Read back as SPKI (DER for EC keys, PEM for EdDSA ones in OpenSC 0.23) and parsed apart from the signer.
      const file = path.join(dir, `${label}-${id}.pub`);
      execFileSync('pkcs11-tool', [...tool, '--read-object', '--type', 'pubkey', '--id', id, '--output-file', file], { env, stdio: 'pipe' });
      const bytes = readFileSync(file);
      const key =
        bytes.subarray(0, 5).toString() === '-----' ? createPublicKey(bytes.toString()) : createPublicKey({ key: bytes, format: 'der', type: 'spki' });
      let publicKey: Uint8Array;
      if (curve === 'ed25519') {
        publicKey = new Uint8Array(key.export({ format: 'der', type: 'spki' }).subarray(-32));
      } else {
        const jwk = key.export({ format: 'jwk' });
        if (jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y) throw new Error(`pkcs11-tool made a ${jwk.crv} key, not secp256k1`);
        publicKey = Uint8Array.from([4, ...Buffer.from(jwk.x, 'base64url'), ...Buffer.from(jwk.y, 'base64url')]);
      }
      return { label: keyLabel, id, publicKey };
    },
    deleteKey(id) {
      const tool = ['--module', SOFTHSM_MODULE, '--token-label', label, '--login', '--pin', pin];
      for (const type of ['privkey', 'pubkey']) execFileSync('pkcs11-tool', [...tool, '--delete-object', '--type', type, '--id', id], { env, stdio: 'pipe' });
    },
    cleanup() {
      if (removed || !home) return;
      removed = true;
      execFileSync('softhsm2-util', ['--delete-token', '--token', label], { env, stdio: 'pipe' });
      if (--home.tokens > 0) return;
      rmSync(home.dir, { recursive: true, force: true });
      if (home.previousConf === undefined) delete process.env.SOFTHSM2_CONF;
      else process.env.SOFTHSM2_CONF = home.previousConf;
      home = undefined;
    },
  };
}
