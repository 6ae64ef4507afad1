// `npm run build`: generated code, then src/ compiled to dist/ (files tsc does not emit copied beside).
import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(`${root}dist`, { recursive: true, force: true });
execFileSync(process.execPath, [`${root}scripts/generate.mjs`], { cwd: root, stdio: 'inherit' });
execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
copyFileSync(`${root}src/db/pglite-thread.mjs`, `${root}dist/db/pglite-thread.mjs`);
