// `prisma generate` needs no schema engine, but Prisma 7's CLI tries to download one unless
// PRISMA_SCHEMA_ENGINE_BINARY points at an existing file. No download is possible on our machines.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
execFileSync('npx', ['prisma', 'generate'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
});
