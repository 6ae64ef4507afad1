import { describe, expect, it } from 'vitest';
import { isPrivate } from '../../../src/core/notifications/url.js';

// RFC 4231, test case 2.
const _RFC_KEY = 'Jefe';
const _RFC_DATA = 'what do ya want for nothing?';
const _RFC_MAC = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';

describe('private targets', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
  ])('%s is private', (ip) => {
    expect(isPrivate(ip)).toBe(true);
  });
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (ip) => {
    expect(isPrivate(ip)).toBe(false);
  });
});
