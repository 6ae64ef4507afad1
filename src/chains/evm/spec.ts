import { z } from 'zod';
import { defineFamily } from '../../core/family-spec.js';
import { evmFields, evmPolicy, evmShape } from './request.js';

// The EVM family's contract (core/family-spec.ts): what the rest of the service knows of it.

export const evmSpec = defineFamily({
  type: 'evm',
  label: 'EVM',
  signerKind: 'evm',
  network: {
    fields: {
      chain_id: z.number().int().positive().optional(),
      required_confirmations: z.number().int().min(0).optional(),
      features: z.array(z.string()).optional(),
      symbol: z.string().optional(),
    },
    required: ['chain_id'],
    probe: 'eth_chainId',
  },
  policy: { schema: evmPolicy, name: 'EvmPolicy' },
  send: {
    letter: 'A',
    name: 'EvmTransactionRequest',
    description: 'Shape A, for EVM relayers.',
    summary: 'EVM relayers take value/to/data/gas fields',
    fields: evmFields,
    schema: evmShape,
  },
  record: {
    fields: ['from', 'to', 'value', 'data', 'nonce', 'gas_limit', 'gas_price', 'max_fee_per_gas', 'max_priority_fee_per_gas', 'speed', 'signature'],
  },
  load: () => import('./pipeline.js').then((m) => m.evmFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.evmDirect),
});
