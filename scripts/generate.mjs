// Generated code (not committed): the Prisma client, Pothos' Prisma types, and the typed GraphQL
// documents of the server's own operations. `npm run build` runs it; so does every install
// (postinstall, with --if-installed), so that a dev checkout type-checks and tests right after
// `npm ci`. A production install (`npm ci --omit=dev`) has no generators and runs the compiled
// dist/, which already holds the generated code: there it does nothing.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const generators = ['prisma', '@graphql-codegen/cli'];
const require = createRequire(`${root}package.json`);
const missing = generators.filter((name) => {
  try {
    require.resolve(`${name}/package.json`);
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  if (process.argv.includes('--if-installed')) process.exit(0);
  process.stderr.write(`generate: ${missing.join(', ')} not installed (dev dependencies): run npm ci first\n`);
  process.exit(1);
}

const run = (args, env = {}) => execFileSync('npx', args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });

// `prisma generate` needs no schema engine, but Prisma 7's CLI tries to download one unless
// PRISMA_SCHEMA_ENGINE_BINARY points at an existing file; no download is possible on our machines.
run(['prisma', 'generate'], { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' });
run(['graphql-codegen', '--config', 'codegen.ts', '--silent']);
