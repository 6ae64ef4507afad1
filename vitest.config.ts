import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // One copy of graphql for ESM and CJS importers alike (it checks instances across modules).
  resolve: { alias: { graphql: createRequire(import.meta.url).resolve('graphql') } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // CI shares a 2-core machine with anvil, PostgreSQL and Redis: one retry absorbs a starved
    // worker; a test that fails twice still fails the run.
    retry: process.env.CI ? 1 : 0,
  },
});
