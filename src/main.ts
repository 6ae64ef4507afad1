// The service's entry (dist/main.js). It checks the Node.js line before anything else is loaded: the
// service itself (serve.ts, dist/serve.js) is imported only on a line package.json's engines admit.
// `npm start` runs the Node pinned in devDependencies; `node dist/main.js` runs whatever node is first.
import { readFileSync } from 'node:fs';
import { describeLines, nodeSupported } from './lib/node-line.js';

const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
if (!nodeSupported(engines.node, process.version)) {
  process.stderr.write(
    `relayer: cannot start: Node.js ${process.version} is not supported; run it on Node.js ${describeLines(engines.node)} (npm start uses the pinned one)\n`,
  );
  process.exit(1);
}
await import('./serve.js');
