// Kill the process at each named crash point of the EVM pipeline (src/lib/crash.ts), restart it,
// and check the chain against the database: every accepted transaction final exactly once.
import { publicKeyToAddress } from 'viem/accounts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { RECEIVER, rpc } from '../support/evm.js';
import { faultEnv, startArmed } from '../support/crash.js';
import { startInstance, type Instance } from '../support/instance.js';
import { DEV_ADDRESS, evmConfig } from '../support/service.js';
import { createToken, SOFTHSM_MODULE, type Token } from '../support/softhsm.js';

const TXS = '/api/v1/relayers/evm-relayer/transactions';
const FINAL = ['confirmed', 'failed', 'expired', 'canceled'];
const STAGES = ['signed', 'saved', 'broadcast'] as const;

type Action = 'send' | 'resubmit' | 'cancel' | 'replace' | 'expire';
/** How each signing path is reached: what is sent, whether the node holds it unmined, what the client then does. */
const PATHS: Record<Action, { hold: boolean; validForMs?: number; client?: 'cancel' | 'replace' }> = {
  send: { hold: false },
  resubmit: { hold: true },
  cancel: { hold: true, client: 'cancel' },
  replace: { hold: true, client: 'replace' },
  expire: { hold: true, validForMs: 4_000 },
};

async function list(instance: Instance): Promise<any[]> {
  const res = await instance.request('GET', `${TXS}?per_page=100`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

/**
 * The suite on one database. It runs from two files, one per database (evm-crash-pglite.test.ts and
 * evm-crash-postgres.test.ts), so that the two halves, each minutes long, run in parallel workers.
 */
export function evmCrashPoints(db: 'pglite' | 'postgres', opts: { run?: boolean; signer?: 'local' | 'pkcs11'; actions?: Action[] } = {}): void {
  const pkcs11 = opts.signer === 'pkcs11';
  describe.runIf(opts.run ?? true)(`a crash at each point of the EVM pipeline (${db}${pkcs11 ? ', a PKCS#11 signer' : ''})`, () => {
    const cleanup: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      while (cleanup.length) await cleanup.pop()!().catch(() => {});
    });
    // The relayer's account: anvil's funded account 0 in a keystore, or a key on a SoftHSM token.
    let account = { address: DEV_ADDRESS as string, env: {} as Record<string, string>, config: (url: string) => evmConfig(url) as object };
    let token: Token | undefined;
    beforeAll(() => {
      if (!pkcs11) return;
      token = createToken({ label: 'crash', pin: '112233' });
      const key = token.addKey('secp256k1', 'relayer');
      account = {
        address: publicKeyToAddress(`0x${Buffer.from(key.publicKey).toString('hex')}`),
        env: { SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!, HSM_PIN: token.pin },
        config: (url) => ({
          ...evmConfig(url),
          signers: [
            {
              id: 'dev-signer',
              type: 'pkcs11',
              config: { module_path: SOFTHSM_MODULE, token_label: 'crash', pin: { type: 'env', value: 'HSM_PIN' }, key_label: 'relayer' },
            },
          ],
        }),
      };
    });
    afterAll(() => token?.cleanup());

    const paths = (Object.entries(PATHS) as [Action, (typeof PATHS)[Action]][]).filter(([action]) => !opts.actions || opts.actions.includes(action));
    for (const [action, how] of paths) {
      for (const stage of STAGES) {
        const point = `evm.${action}.${stage}`;
        it(`${point}: after a restart every accepted transaction is final once, on chain as in the database`, async () => {
          const anvil = await startAnvil();
          cleanup.push(() => anvil.stop());
          const env = { ...(await faultEnv(db, account.config(anvil.url), 'faults', cleanup)), ...account.env };
          if (pkcs11) await rpc(anvil.url, 'anvil_setBalance', [account.address, '0x56bc75e2d63100000']);
          const start = Number(await rpc(anvil.url, 'eth_getTransactionCount', [account.address, 'latest']));
          if (how.hold) await rpc(anvil.url, 'evm_setAutomine', [false]);

          const armed = await startArmed(env, point);
          cleanup.push(() => armed.kill());
          const ids: string[] = [];
          const sends = [1, 2, 3].map(async (i) => {
            const body = { to: RECEIVER, value: 1000 + i, ...(how.validForMs ? { valid_until: new Date(Date.now() + how.validForMs).toISOString() } : {}) };
            const res = await armed.request('POST', TXS, body).catch(() => null);
            if (res?.status === 200) ids.push(((await res.json()) as any).data.id);
          });
          await Promise.all(sends);
          if (how.client) {
            // Once the first is out on the node, the client cancels or replaces it.
            const target = ids[0];
            for (let i = 0; i < 200; i++) {
              const tx = ((await (await armed.request('GET', `${TXS}/${target}`)).json()) as any).data;
              if (tx.status === 'submitted') break;
              await new Promise((r) => setTimeout(r, 50));
            }
            const res =
              how.client === 'cancel'
                ? await armed.request('DELETE', `${TXS}/${target}`)
                : await armed.request('PUT', `${TXS}/${target}`, { to: RECEIVER, value: 2000 });
            expect(res.status).toBe(200);
          }
          await armed.crashed;

          // The node mines again; a new process takes over.
          if (how.hold) await rpc(anvil.url, 'evm_setIntervalMining', [1]);
          const instance = await startInstance(env);
          cleanup.push(() => instance.stop());
          let rows: any[] = [];
          const deadline = Date.now() + 60_000;
          while (!(rows.length >= ids.length && rows.every((r) => FINAL.includes(r.status)))) {
            if (Date.now() > deadline) throw new Error(`not final: ${JSON.stringify(rows)}\n${instance.output().slice(-3000)}`);
            await new Promise((r) => setTimeout(r, 250));
            rows = await list(instance);
          }
          // Nothing more can come from the service once it is gone (SIGKILL, so no shutdown code runs
          // either). One more block takes whatever the node still holds; nothing may be left waiting
          // there, not even behind a nonce gap. Then the chain is compared with the rows.
          await instance.kill();
          await rpc(anvil.url, 'evm_mine');
          expect(await rpc(anvil.url, 'txpool_status')).toEqual({ pending: '0x0', queued: '0x0' });

          // A crash at the first signing can come before the last answer: an unanswered send may or may
          // not be stored, and when stored it is held to the same rules as the answered ones (all rows below).
          expect(ids.length).toBeGreaterThan(0);
          for (const id of ids)
            expect(
              rows.find((r) => r.id === id),
              id,
            ).toBeDefined();
          if (action === 'send' || action === 'resubmit')
            expect(rows.filter((r) => ids.includes(r.id)).map((r) => r.status)).toEqual(ids.map(() => 'confirmed'));
          if (action === 'cancel') expect(['canceled', 'confirmed']).toContain(rows.find((r) => r.id === ids[0]).status);
          if (action === 'expire') expect(rows.filter((r) => ['expired', 'confirmed'].includes(r.status)).length).toBe(rows.length);

          // Nonces contiguous from the account's start, each row's hash mined at its nonce.
          expect(rows.map((r) => r.nonce).sort((a, b) => a - b)).toEqual(rows.map((_, i) => start + i));
          expect(Number(await rpc(anvil.url, 'eth_getTransactionCount', [account.address, 'latest']))).toBe(start + rows.length);
          for (const r of rows) {
            const onChain = await rpc(anvil.url, 'eth_getTransactionByHash', [r.hash]);
            expect(onChain?.blockNumber, `${r.id} ${r.hash}`).toBeTruthy();
            expect(Number(onChain.nonce)).toBe(r.nonce);
          }
          // Payloads on chain are exactly the confirmed rows' payloads, each once (values are unique).
          const head = Number(await rpc(anvil.url, 'eth_blockNumber'));
          const mined: string[] = [];
          for (let b = 0; b <= head; b++) {
            const block = await rpc(anvil.url, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, true]);
            for (const t of block.transactions)
              if (t.from.toLowerCase() === account.address.toLowerCase() && t.to?.toLowerCase() === RECEIVER.toLowerCase())
                mined.push(BigInt(t.value).toString());
          }
          const confirmed = rows.filter((r) => r.status === 'confirmed').map((r) => String(r.value));
          expect(mined.sort()).toEqual(confirmed.sort());
        });
      }
    }
  });
}
