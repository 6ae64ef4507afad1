import { describe, expect, it } from 'vitest';
import { globToLike, keyProblem } from '../../../src/core/plugins/kv.js';

describe('kv keys and patterns', () => {
  it('takes the reference key alphabet, 1 to 512 characters', () => {
    for (const k of ['a', 'A-z_0:9', 'x'.repeat(512)]) expect(keyProblem(k)).toBeUndefined();
    for (const k of ['', 'x'.repeat(513), 'a b', 'a/b', 'é', 7, null]) expect(keyProblem(k)).toBe('invalid key: 1 to 512 of A-Z a-z 0-9 : _ -');
  });

  it('turns a glob into a LIKE pattern, escaping what LIKE would read', () => {
    expect(globToLike('*')).toBe('%');
    expect(globToLike('user:*:name?')).toBe('user:%:name_');
    expect(globToLike('a_b%c')).toBe('a\\_b\\%c');
    expect(globToLike('lit\\*eral')).toBe('lit*eral');
    expect(globToLike('back\\\\slash')).toBe('back\\\\slash');
  });
});
