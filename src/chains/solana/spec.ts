import { z } from 'zod';
import { defineFamily } from '../../core/family-spec.js';
import { solanaPolicySchema } from './policy.js';

// The Solana family's contract (core/family-spec.ts): what the rest of the service knows of it.

/** Shape B of the send route (spec 4.1): the chain module judges the encoding and the transaction itself. */
export const solanaShape = z.object({ transaction: z.string('required').min(1, 'required') }).strict();

export type SolanaRequest = z.output<typeof solanaShape>;

export const solanaSpec = defineFamily({
  type: 'solana',
  label: 'Solana',
  signerKind: 'solana',
  network: { fields: {}, probe: 'getHealth' },
  policy: { schema: solanaPolicySchema as z.ZodType<Record<string, unknown>> },
  send: {
    letter: 'B',
    name: 'SolanaTransactionRequest',
    description: 'Shape B, for Solana relayers.',
    summary: 'Solana relayers `transaction`',
    restHint: '(`transaction`)',
    fields: {
      transaction: {
        type: { kind: 'string' },
        required: true,
        description: 'Shape B (Solana), required: the base64 serialized transaction.',
        gqlDescription: 'Solana: base64 serialized transaction.',
      },
    },
    schema: solanaShape,
  },
  record: { fields: ['network_type', 'from'], networkData: true },
  load: () => import('./pipeline.js').then((m) => m.solanaFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.solanaDirect),
});
