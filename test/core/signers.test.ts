import { describe, expect, it } from 'vitest';
import { signerInputs } from '../../src/core/signers.js';
import { custodiesOf } from '../../src/signers/custody.js';
import { vault } from '../../src/signers/vault/index.js';
import { custodies, routes } from '../support/families.js';

describe('signer types', () => {
  it('are those handed down: local, plain and the custodies given', () => {
    const { createInput, updateInput } = signerInputs(custodiesOf([vault]));
    expect(createInput.safeParse({ type: 'vault', config: {} }).success).toBe(true);
    expect(createInput.safeParse({ type: 'aws_kms' }).error?.issues.map((i) => i.message)).toEqual(['must be one of local, plain, vault']);
    expect(updateInput.safeParse({ type: 'aws_kms', config: {} }).success).toBe(false);
  });

  it("the REST document lists the composition root's custodies", () => {
    const create = routes.find((r) => r.id === 'createSigner')!;
    const types = (create.body!.schema as ReturnType<typeof signerInputs>['createInput']).shape.type.options;
    expect(types).toEqual(['local', 'plain', ...custodies.keys()]);
    expect(types).toContain('aws_kms');
  });
});
