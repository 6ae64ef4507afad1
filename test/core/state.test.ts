import { afterEach, describe, expect, it, vi } from 'vitest';
import { relayerEntry as relayerEntryOf } from '../../src/core/relayers/entry.js';
import { createState, slot } from '../../src/core/state.js';
import { families } from '../support/families.js';

const _FAMILIES = families.list;
const NETWORK_TYPES = families.types;
const _specOf = families.spec;
const _relayerEntry = relayerEntryOf(NETWORK_TYPES);

afterEach(() => vi.useRealTimers());

describe('runtime state slots', () => {
  it('gives each runtime its own value of a slot, created once', () => {
    const s = slot('test', () => new Map<string, number>());
    const [a, b] = [createState(), createState()];
    a(s).set('x', 1);
    expect(a(s).get('x')).toBe(1);
    expect(b(s).has('x')).toBe(false);
  });
});
