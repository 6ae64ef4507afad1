// Generated code (not committed): the Prisma client, Pothos' Prisma types, and the typed GraphQL
// documents of the server's own operations. Runs after every install.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (args, env = {}) => execFileSync('npx', args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });

// `prisma generate` needs no schema engine, but Prisma 7's CLI tries to download one unless
// PRISMA_SCHEMA_ENGINE_BINARY points at an existing file; no download is possible on our machines.
run(['prisma', 'generate'], { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' });
run(['graphql-codegen', '--config', 'codegen.ts', '--silent']);
