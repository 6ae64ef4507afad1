// The hostile-request fuzz of test/e2e/rest-fuzz.test.ts (test/support/hostile.ts) at any size: NUL
// bytes, lone surrogates, inexact numbers, wrong content types, deep and large bodies at every REST
// route; every one must be refused in the envelope and store nothing. In process, on PGlite.
//
//   npx tsx bench/fuzz.ts [--cases 100000] [--concurrency 25] [--seed N]

import { parseArgs } from 'node:util';
import { restRoutes } from '../src/api/rest/routes.js';
import { FUZZ_MAX_BODY_BYTES, runHostile } from '../test/support/hostile.js';
import { startTestService } from '../test/support/service.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '100000' }, concurrency: { type: 'string', default: '25' }, seed: { type: 'string' } },
});
const svc = await startTestService({
  workers: false,
  env: { RATE_LIMIT_BURST_SIZE: '100000000', RATE_LIMIT_REQUESTS_PER_SECOND: '100000000', MAX_BODY_BYTES: String(FUZZ_MAX_BODY_BYTES) },
});
try {
  const started = performance.now();
  const cases = Number(values.cases);
  const { failures, byKind, seed } = await runHostile({
    app: svc.app,
    rt: svc.rt,
    apiKey: svc.apiKey,
    routes: restRoutes(svc.rt.families, svc.rt.signers.custodies),
    cases,
    concurrency: Number(values.concurrency),
    seed: values.seed ? Number(values.seed) : undefined,
  });
  const s = (performance.now() - started) / 1000;
  console.log(`${cases} hostile requests (seed ${seed}) in ${s.toFixed(1)} s (${Math.round(cases / s)}/s): ${JSON.stringify(byKind)}`);
  console.log(failures.length ? `FAILURES:\n${failures.join('\n')}` : 'all refused in the envelope, nothing stored');
  process.exitCode = failures.length ? 1 : 0;
} finally {
  await svc.stop();
}
