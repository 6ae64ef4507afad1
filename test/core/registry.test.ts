import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { relayerEntry as relayerEntryOf } from '../../src/core/relayers/entry.js';
import { defineFamily, type FamilySpec } from '../../src/core/family-spec.js';
import { sendFieldsOf } from '../../src/api/graphql/fields.js';
import { jsonSchemaOf } from '../../src/api/rest/openapi.js';
import { families, schema } from '../support/families.js';

const FAMILIES = families.list;
const NETWORK_TYPES = families.types;
const specOf = families.spec;
const relayerEntry = relayerEntryOf(NETWORK_TYPES);

describe('chain families, listed once', () => {
  it('give the NetworkType enum and the config check their types', () => {
    const e = schema.getType('NetworkType') as unknown as { getValues(): { name: string }[] };
    expect(
      e
        .getValues()
        .map((v) => v.name)
        .sort(),
    ).toEqual([...NETWORK_TYPES].sort());
    const entry = { id: 'r', name: 'r', network: 'n', signer_id: 's' };
    for (const type of NETWORK_TYPES) expect(relayerEntry.safeParse({ ...entry, network_type: type }).success).toBe(true);
    expect(relayerEntry.safeParse({ ...entry, network_type: 'tron' }).success).toBe(false);
  });

  it('give every send field once, shared ones described with the shapes that take them', () => {
    const fields = sendFieldsOf(FAMILIES as readonly FamilySpec[]);
    const camel = (k: string) => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    expect(Object.keys(fields)).toEqual(FAMILIES.flatMap((f) => Object.keys(f.send.fields.shape).map(camel)).filter((k, i, all) => all.indexOf(k) === i));
    for (const type of ['evm', 'stellar']) {
      expect((jsonSchemaOf(specOf(type).send.fields, {}).properties as Record<string, unknown>).valid_until).toMatchObject({
        description: 'Shapes A and C: RFC 3339 expiry (default 8 hours).',
      });
    }
  });

  it('take a fourth family from its spec alone, and refuse two definitions of one field', () => {
    const tron = defineFamily({
      type: 'tron',
      label: 'Tron',
      signerKind: 'evm',
      network: { fields: {}, probe: 'getHealth' },
      policy: { schema: z.object({}).strict(), name: 'TronPolicy' },
      send: {
        letter: 'D',
        name: 'TronTransactionRequest',
        description: 'Shape D, for Tron relayers.',
        summary: 'Tron relayers `raw_data`',
        fields: z.strictObject({
          raw_data: z.string().meta({ description: 'Shape D (Tron), required.' }),
          valid_until: z.string().optional().meta({ description: 'Shapes A, C and D: RFC 3339 expiry (default 8 hours).' }),
        }),
        schema: z.object({ rawData: z.string() }).strict(),
      },
      record: { fields: ['network_type', 'from'], networkData: true },
      load: async () => ({}),
    });
    const fields = sendFieldsOf([...(FAMILIES as readonly FamilySpec[]), tron]);
    expect(z.globalRegistry.get(fields.rawData.schema)?.description).toBe('Shape D (Tron), required.');
    expect(Object.keys(fields)).toContain('validUntil');
    const clash = { ...tron, send: { ...tron.send, fields: z.strictObject({ value: z.string() }) } };
    expect(() => sendFieldsOf([...(FAMILIES as readonly FamilySpec[]), clash])).toThrow(/value is defined by two families/);
  });
});
