import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { printedSchema, SCHEMA_FILE } from '../../../src/api/graphql/print.js';
import { families } from '../../support/families.js';

describe('committed schema', () => {
  it('matches the schema the code builds (run `npm run schema:print` after changing types)', async () => {
    expect(await readFile(SCHEMA_FILE, 'utf8')).toBe(printedSchema(families));
  });
});
