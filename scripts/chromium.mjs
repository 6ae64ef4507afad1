// Before `npm test`: the browser test (test/api/graphql/graphiql.test.ts) drives Debian's headless Chromium;
// install it when it is missing, so the test command works on a fresh machine.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  const root = process.getuid?.() === 0;
  const run = (args) =>
    execFileSync(root ? args[0] : 'sudo', root ? args.slice(1) : args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  console.log(`${CHROMIUM} is missing: installing Debian's chromium for the browser test`);
  run(['apt-get', 'update', '-q']);
  run(['apt-get', 'install', '-y', '-q', 'chromium']);
}
