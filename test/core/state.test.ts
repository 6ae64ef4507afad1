import { describe, expect, it } from 'vitest';
import { createState, slot } from '../../src/core/state.js';

describe('runtime state slots', () => {
  it('gives each runtime its own value of a slot, created once', () => {
    const s = slot('test', () => new Map<string, number>());
    const [a, b] = [createState(), createState()];
    a(s).set('x', 1);
    expect(a(s).get('x')).toBe(1);
    expect(b(s).has('x')).toBe(false);
  });
});
