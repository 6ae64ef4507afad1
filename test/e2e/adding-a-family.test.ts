// Follows docs/architecture.md's "Adding a chain family" on a copy of the sources: a family folder
// with its spec.ts and pipeline.ts, its line in src/chains/list.ts, then the schema printed and the
// sources type-checked, as the steps say. The new network type must reach what derives from the list.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/** The type checker's complaints about the copy's sources ('' when it has none). */
const typecheck = (dir: string) =>
  run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.check.json'], { cwd: dir }).then(
    () => '',
    (e: { stdout: string }) => e.stdout,
  );

const SPEC = `import { z } from 'zod';
import { camelShape, defineFamily } from '../../core/family-spec.js';

const tronFields = z.object({ payload: z.string().min(1).meta({ description: 'Tron: the raw transaction, hex.' }) }).strict();
export const tronShape = z.object(camelShape(tronFields.shape)).strict();

export const tronSpec = defineFamily({
  type: 'tron',
  label: 'Tron',
  signerKind: 'evm',
  network: { fields: { chain_id: z.number().int().positive().optional() }, probe: 'eth_chainId' },
  policy: { schema: z.object({ max_fee: z.string().optional() }).strict(), name: 'TronPolicy' },
  send: {
    letter: 'T',
    name: 'TronTransactionRequest',
    description: 'Shape T, for Tron relayers.',
    summary: 'Tron relayers take \`payload\`',
    fields: tronFields,
    schema: tronShape,
  },
  record: { fields: ['from'] },
  load: () => import('./pipeline.js').then((m) => m.tronFamily),
});
`;

const PIPELINE = `import type { ChainFamily } from '../../core/transactions/pipeline.js';
import { invalid } from '../../core/domain-error.js';

export const tronFamily: ChainFamily<'tron'> = {
  async accept(_rt, relayer, request) {
    if (!request.payload.startsWith('0x')) throw invalid('payload: must be hex');
    return { data: { from: relayer.address, validUntil: new Date(Date.now() + 3_600_000) }, request: { payload: request.payload }, takesNonce: true };
  },
  chainNonce: async () => 0n,
  balance: async () => ({ balance: 0n, unit: 'sun' }),
  steps: {
    context: () => ({}),
    observe: async () => null,
    decide: (rows) => rows.map((tx) => ({ tx, patch: {}, effects: [], nextInMs: null })),
    perform: async () => [],
    record: (d) => d,
  },
};
`;

describe('adding a chain family, as docs/architecture.md says', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'family-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gives a network type that the schema, the send input and the type checks know', async () => {
    const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    const steps = doc.slice(doc.indexOf('## Adding a chain family'));
    // The steps this test follows are the ones written there.
    expect(steps).toContain('Create `src/chains/tron/` with `pipeline.ts`');
    expect(steps).toContain('`src/chains/list.ts`');
    expect(steps).toContain('`npm run schema:print` and `npm run typecheck`');

    for (const part of ['src', 'scripts/print-schema.ts', 'schema', 'package.json', 'tsconfig.json'])
      cpSync(path.join(root, part), path.join(dir, part), { recursive: true });
    symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
    // Step 1: the family folder.
    mkdirSync(path.join(dir, 'src/chains/tron'));
    writeFileSync(path.join(dir, 'src/chains/tron/spec.ts'), SPEC);
    writeFileSync(path.join(dir, 'src/chains/tron/pipeline.ts'), PIPELINE);
    // Step 2: its line in the list.
    const list = path.join(dir, 'src/chains/list.ts');
    const listed = readFileSync(list, 'utf8').replace(/\[evmSpec, solanaSpec, stellarSpec\]/, '[evmSpec, solanaSpec, stellarSpec, tronSpec]');
    writeFileSync(list, `import { tronSpec } from './tron/spec.js';\n${listed}`);
    // Step 3: the schema printed, the sources type-checked.
    await run(process.execPath, ['--import', 'tsx', 'scripts/print-schema.ts'], { cwd: dir });
    writeFileSync(
      path.join(dir, 'tsconfig.check.json'),
      JSON.stringify({ extends: './tsconfig.json', include: ['src'], compilerOptions: { incremental: true, tsBuildInfoFile: 'check.tsbuildinfo' } }),
    );
    expect(await typecheck(dir)).toBe('');

    const schema = readFileSync(path.join(dir, 'schema/schema.graphql'), 'utf8');
    expect(schema).toMatch(/enum NetworkType \{[^}]*\btron\b[^}]*\}/);
    expect(schema).toContain('Tron relayers take `payload`');
  }, 300_000);

  it('is refused by the type checks when its pipeline takes a request its shape does not give', async () => {
    const file = path.join(dir, 'src/chains/tron/pipeline.ts');
    writeFileSync(file, PIPELINE.replace('request.payload.startsWith', 'request.calldata.startsWith'));
    expect(await typecheck(dir)).toContain("Property 'calldata' does not exist");
  }, 300_000);
});
