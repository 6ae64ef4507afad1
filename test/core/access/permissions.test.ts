import { describe, expect, it } from 'vitest';
import { allows, covers, type Grant, grantsOf, parsePermission, visible, visibleTest } from '../../../src/core/access/permissions.js';

const g = (text: string) => parsePermission(text) as Grant;

describe('permissions', () => {
  it('parse <resource>:<id>:<action>, ids with colons included, and say why a string is not one', () => {
    expect(parsePermission('relayer:all:execute')).toEqual({ resource: 'relayer', id: '*', action: 'execute' });
    expect(parsePermission('network:evm:sepolia:read')).toEqual({ resource: 'network', id: 'evm:sepolia', action: 'read' });
    expect(parsePermission('*:*:*')).toEqual({ resource: '*', id: '*', action: '*' });
    expect(parsePermission('relayer:prod-*:read')).toEqual({ resource: 'relayer', id: 'prod-*', action: 'read' });
    expect(parsePermission('relayer:read')).toMatch(/must be <resource>/);
    expect(parsePermission('relayer::read')).toMatch(/the id must be/);
    expect(parsePermission('relayers:all:read')).toMatch(/unknown resource "relayers"/);
    expect(parsePermission('relayer:all:delete')).toMatch(/unknown action "delete"/);
    expect(parsePermission('relayer:a*b:read')).toMatch(/prefix ending in \*/);
    expect(grantsOf(['relayer:all:read', 'nonsense'])).toEqual([{ resource: 'relayer', id: '*', action: 'read' }]);
  });

  it('allow an action and those below it (read < execute < manage), on the ids named, a prefix or all', () => {
    const grants = [g('relayer:r1:execute'), g('notification:team-*:manage')];
    expect(allows(grants, 'relayer', 'r1', 'read')).toBe(true);
    expect(allows(grants, 'relayer', 'r1', 'execute')).toBe(true);
    expect(allows(grants, 'relayer', 'r1', 'manage')).toBe(false);
    expect(allows(grants, 'relayer', 'r2', 'read')).toBe(false);
    expect(allows(grants, 'notification', 'team-a', 'manage')).toBe(true);
    expect(allows(grants, 'notification', 'other', 'read')).toBe(false);
    expect(allows(grants, 'signer', 'r1', 'read')).toBe(false);
    expect(allows([g('*:all:read')], 'signer', 'any', 'read')).toBe(true);
    expect(allows([g('*:all:read')], 'signer', 'any', 'execute')).toBe(false);
    expect(allows([g('relayer:all:*')], 'relayer', 'x', 'manage')).toBe(true);
  });

  it('cover only what they hold: a key cannot give more than its own', () => {
    const own = [g('relayer:prod-*:execute'), g('api_key:all:manage')];
    expect(covers(own, g('relayer:prod-eu:read'))).toBe(true);
    expect(covers(own, g('relayer:prod-eu-*:execute'))).toBe(true);
    expect(covers(own, g('relayer:prod-*:manage'))).toBe(false);
    expect(covers(own, g('relayer:all:read'))).toBe(false);
    expect(covers(own, g('*:prod-eu:read'))).toBe(false);
    expect(covers([g('*:*:*')], g('*:all:manage'))).toBe(true);
  });

  it('narrow lists to the ids named and the prefixes, or leave them whole', () => {
    expect(visible([g('relayer:all:read')], 'relayer')).toBe('all');
    const v = visible([g('relayer:a:read'), g('relayer:b-*:execute'), g('relayer:c:read'), g('notification:all:read')], 'relayer');
    expect(v).toEqual({ ids: ['a', 'c'], prefixes: ['b-'] });
    expect(['a', 'b-1', 'b', 'c', 'd'].filter(visibleTest(v))).toEqual(['a', 'b-1', 'c']);
    expect(visible([g('relayer:a:read')], 'relayer', 'execute')).toEqual({ ids: [], prefixes: [] });
  });
});
