// Signing where the key is kept, in one run: a local keystore, a PKCS#11 token (SoftHSM, in
// process) and a remote custody (AWS KMS's client against the loopback stand-in, answering after
// --latency ms, 20 by default). For each:
//   sign     the median time of one signature (a keccak digest), one at a time;
//   batch    --count signatures at once: signatures per second;
//   relay    --count transfers sent at once through a relayer on that signer (in-process service
//            on PGlite, anvil mining a block every second), timed until every one is confirmed:
//            transfers per second, and the ratio to the local signer's.
// A remote signer should lose no more than its round trips: the signings of a step run at once.
//
//   npx tsx bench/signers.ts [--count 200] [--latency 20]

import { parseArgs } from 'node:util';
import { keccak256, toBytes, type Hex } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import type { Signer } from '../src/signers/index.js';
import { createLocalSigner } from '../src/signers/index.js';
import { awsKms } from '../src/signers/aws-kms/index.js';
import { pkcs11 } from '../src/signers/pkcs11/index.js';
import { custodySigner } from '../src/signers/remote.js';
import type { KeyCustody, OpenContext } from '../src/signers/custody.js';
import { rpc, sendOk, waitStatus } from '../test/support/evm.js';
import { evmConfig, startTestService } from '../test/support/service.js';
import { createToken, SOFTHSM_MODULE } from '../test/support/softhsm.js';
import { startAwsKmsStandin } from '../test/support/standins/aws-kms.js';
import { median } from './stats.js';

const { values: args } = parseArgs({ options: { count: { type: 'string', default: '200' }, latency: { type: 'string', default: '20' } } });
const COUNT = Number(args.count);
const LATENCY = Number(args.latency);
const DEV_KEY = toBytes('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');

const token = createToken({ label: 'bench', pin: '135790' });
const key = token.addKey('secp256k1', 'bench-key');
const kms = await startAwsKmsStandin();
const { keyId } = kms.createKey('ECC_SECG_P256K1');
Object.assign(process.env, {
  AWS_ENDPOINT_URL_KMS: kms.url,
  AWS_ACCESS_KEY_ID: kms.accessKeyId,
  AWS_SECRET_ACCESS_KEY: kms.secretAccessKey,
  AWS_REGION: kms.region,
  BENCH_HSM_PIN: token.pin,
});
const ctx = (curve: 'secp256k1'): OpenContext => ({ id: 'bench', curve, baseDir: process.cwd(), secret: () => token.pin });

type Kind = { name: string; signer: () => Promise<Signer>; config: { id: string; type: string; config: object } };
const kinds: Kind[] = [
  {
    name: 'local',
    signer: async () => createLocalSigner(DEV_KEY, 'evm'),
    config: evmConfig('').signers[0],
  },
  {
    name: 'pkcs11',
    signer: async () => custodySigner((await pkcs11.open(pkcs11.config.parse(hsmConfig()), ctx('secp256k1'))) as KeyCustody, 'evm'),
    config: { id: 'hsm', type: 'pkcs11', config: { ...hsmConfig(), pin: { type: 'env', value: 'BENCH_HSM_PIN' } } },
  },
  {
    name: `remote (${LATENCY} ms)`,
    signer: async () => custodySigner((await awsKms.open(awsKms.config.parse(kmsConfig()), ctx('secp256k1'))) as KeyCustody, 'evm'),
    config: { id: 'kms', type: 'aws_kms', config: kmsConfig() },
  },
];
function hsmConfig() {
  return { module_path: SOFTHSM_MODULE, token_label: token.label, pin: token.pin, key_label: 'bench-key' };
}
function kmsConfig() {
  return { region: kms.region, key_id: keyId };
}

async function signing(signer: Signer) {
  if (signer.kind !== 'evm') throw new Error('evm only');
  const digest = (i: number) => keccak256(toBytes(`bench ${i}`));
  const one: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    await signer.account.sign!({ hash: digest(i) as Hex });
    one.push(performance.now() - t0);
  }
  const t0 = performance.now();
  await Promise.all(Array.from({ length: COUNT }, (_, i) => signer.account.sign!({ hash: digest(i) as Hex })));
  return { signMs: median(one), perSecond: COUNT / ((performance.now() - t0) / 1000) };
}

async function relaying(kind: Kind): Promise<number> {
  const svc = await startTestService({
    anvil: { blockTime: 1 },
    env: { SIGNER_TIMEOUT_MS: '10000', RATE_LIMIT_REQUESTS_PER_SECOND: '100000', RATE_LIMIT_BURST_SIZE: '100000' },
    config: ({ rpcUrl }) => ({ ...evmConfig(rpcUrl, { relayer: { signer_id: kind.config.id } }), signers: [kind.config] }),
  });
  try {
    const relayer = (await (await svc.request('GET', '/api/v1/relayers/evm-relayer')).json()).data;
    await rpc(svc.anvil!.url, 'anvil_setBalance', [relayer.address, '0x56bc75e2d63100000']);
    await waitStatus(svc, (await sendOk(svc)).id, 'confirmed'); // warm-up
    const t0 = performance.now();
    const ids = await Promise.all(Array.from({ length: COUNT }, async () => (await sendOk(svc)).id));
    for (const id of ids) await waitStatus(svc, id, 'confirmed', 120_000);
    return COUNT / ((performance.now() - t0) / 1000);
  } finally {
    await svc.stop();
  }
}

try {
  const hsmAddress = publicKeyToAddress(`0x${Buffer.from(key.publicKey).toString('hex')}` as Hex);
  console.log(`signers: local, pkcs11 (SoftHSM, ${hsmAddress}), remote (AWS KMS client on a stand-in, ${LATENCY} ms a call); ${COUNT} at once`);
  kms.setLatency(LATENCY);
  const rows: string[] = [];
  let localRate = 0;
  for (const kind of kinds) {
    const s = await signing(await kind.signer());
    const rate = await relaying(kind);
    if (kind.name === 'local') localRate = rate;
    rows.push(
      `${kind.name.padEnd(16)} sign ${s.signMs.toFixed(2).padStart(7)} ms   batch ${s.perSecond.toFixed(0).padStart(6)}/s   relay ${rate.toFixed(1).padStart(6)} tx/s   ${(rate / localRate).toFixed(2)} of local`,
    );
  }
  for (const r of rows) console.log(r);
} finally {
  await kms.stop();
  token.cleanup();
}
