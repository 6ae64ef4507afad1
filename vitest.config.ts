import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/sequencer.js';

/** Tests that start nothing: no service, chain, database, server or process. */
const UNIT = [
  'test/api/body.test.ts',
  'test/api/graphql/schema.test.ts',
  'test/api/rest/plugins.test.ts',
  'test/api/rest/operations.test.ts',
  'test/chains/evm/decide.test.ts',
  'test/chains/evm/aa/userop.test.ts',
  'test/chains/evm/aa/policy.test.ts',
  'test/chains/solana/decide.test.ts',
  'test/chains/stellar/decide.test.ts',
  'test/core/access/permissions.test.ts',
  'test/core/domain-error.test.ts',
  'test/core/notifications/delivery.test.ts',
  'test/core/notifications/signature.test.ts',
  'test/core/notifications/url.test.ts',
  'test/core/plugins/kv.test.ts',
  'test/core/plugins/outcome.test.ts',
  'test/core/plugins/process.test.ts',
  'test/core/plugins/settings.test.ts',
  'test/core/registry.test.ts',
  'test/core/state.test.ts',
  'test/core/relayers/rpc-rules.test.ts',
  'test/core/signers.test.ts',
  'test/core/transactions/record.test.ts',
  'test/lib/expiring.test.ts',
  'test/lib/json.test.ts',
  'test/lib/node-line.test.ts',
  'test/signers/secp256k1.test.ts',
];
/** Crash points, kill -9, RPC and infrastructure chaos, and the short soak. */
const FAULTS = ['test/faults/**/*.test.ts'];
/** Builds dist/ when stale and makes the migrated PGlite template (test/support/global-setup.ts). */
const GLOBAL_SETUP = ['test/support/global-setup.ts'];

export default defineConfig({
  // One copy of graphql for ESM and CJS importers alike (it checks instances across modules).
  resolve: { alias: { graphql: createRequire(import.meta.url).resolve('graphql') } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Vitest's default on 2 cores is one worker, and most test time is waiting (blocks, leases,
    // retries, restarts): three files at a time keep both cores busy. VITEST_MAX_WORKERS overrides.
    maxWorkers: 3,
    // As the spawned services (test/support/instance.ts NODE_FLAGS): the in-process services' PGlite
    // and Prisma WebAssembly run on V8's baseline compiler only, without recompiling hot functions;
    // a quarter less CPU for the integration files, on a suite that keeps both cores busy.
    execArgv: ['--liftoff-only'],
    // A worker runs its files one after another in one module graph: each file importing the service
    // afresh cost 3-4 s of CPU. A file puts back what it changes (timers, environment variables) and
    // stops what it starts (services, databases, servers).
    isolate: false,
    // CI shares a 2-core machine with anvil, PostgreSQL and Redis: one retry absorbs a starved
    // worker; a test that fails twice still fails the run.
    retry: process.env.CI ? 1 : 0,
    // The longest files first (test/support/durations.json), so that the workers finish together.
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      // Everything else, test/deploy/ included.
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...FAULTS], globalSetup: GLOBAL_SETUP } },
      // A fault test starts the service several times and waits out the fault: with three files at
      // a time the default minute was too short for evm-kill's five kill -9 rounds (which alone
      // allow 90 s for the last restart to finish the work).
      { extends: true, test: { name: 'faults', include: FAULTS, globalSetup: GLOBAL_SETUP, testTimeout: 240_000 } },
    ],
  },
});
