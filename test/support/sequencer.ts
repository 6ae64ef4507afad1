// The order the test files start in: longest first, so that the workers finish together. Vitest's
// own order, on a machine with no results cached (CI's fresh clone), is by project name and then by
// file size, which started the longest fault file (a three-line file) five minutes into the run.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each file took in a whole run on the 2-core CI machine (3 workers), for the files that
 * take more than a few seconds; a file not listed counts as UNLISTED_S. The same order everywhere (not
 * this machine's cached results, which a run of one file skews). When files are added or their times
 * move: `npx vitest run --reporter=default --reporter=json --outputFile.json=run.json` and then
 * `npx tsx test/support/durations.ts run.json`.
 */
const DURATIONS = new URL('./durations.json', import.meta.url);
const UNLISTED_S = 3;

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const table = JSON.parse(readFileSync(DURATIONS, 'utf8')) as Record<string, number>;
    const root = this.ctx.config.root;
    const weight = new Map(files.map((f) => [f, table[relative(root, f.moduleId).replaceAll('\\', '/')] ?? UNLISTED_S]));
    return [...files].sort((a, b) => weight.get(b)! - weight.get(a)!);
  }
}
