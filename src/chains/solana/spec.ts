import { z } from 'zod';
import { camelShape, defineFamily, graphqlInfo } from '../../core/family-spec.js';
import { solanaPolicySchema } from './policy.js';
import { BASE64 } from '../../lib/validate.js';

// The Solana family's contract (core/family-spec.ts): what the rest of the service knows of it.

/** Shape B of the send route (spec 4.1), by REST name: the chain module judges the encoding and the transaction itself. */
const solanaFields = z
  .object({
    transaction: z
      .string({ error: (iss) => (iss.input === undefined ? 'required' : undefined) })
      .min(1, 'required')
      .regex(BASE64, 'must be a base64 string')
      .meta({ description: 'Shape B (Solana), required: the base64 serialized transaction.' })
      .register(graphqlInfo, { description: 'Solana: base64 serialized transaction.' }),
  })
  .strict();

export const solanaShape = z.object(camelShape(solanaFields.shape)).strict();

export type SolanaRequest = z.output<typeof solanaShape>;

export const solanaSpec = defineFamily({
  type: 'solana',
  label: 'Solana',
  signerKind: 'solana',
  network: { fields: {}, probe: 'getHealth' },
  policy: { schema: solanaPolicySchema, name: 'SolanaPolicy' },
  send: {
    letter: 'B',
    name: 'SolanaTransactionRequest',
    description: 'Shape B, for Solana relayers.',
    summary: 'Solana relayers `transaction`',
    restHint: '(`transaction`)',
    fields: solanaFields,
    schema: solanaShape,
  },
  record: { fields: ['network_type', 'from'], networkData: true },
  load: () => import('./pipeline.js').then((m) => m.solanaFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.solanaDirect),
});
