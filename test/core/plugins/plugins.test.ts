// The pure parts of plugins: kv keys and patterns, what a call answers, settings, the call's params and route.
import { describe, expect, it } from 'vitest';
import { paramsOf, routeOf } from '../../../src/api/rest/plugins.js';
import { globToLike, keyProblem } from '../../../src/core/plugins/kv.js';
import {
  deniedOf,
  deniedResult,
  ended,
  keepLine,
  type LogEntry,
  MAX_ENTRIES,
  MAX_LINE,
  statusOf,
  succeeded,
  threw,
} from '../../../src/core/plugins/outcome.js';
import { CHILD, childArgs, exposed, permissionProblem, readsOf } from '../../../src/core/plugins/process.js';
import { applyUpdate, effective, type PluginSettings, settingsUpdate } from '../../../src/core/plugins/settings.js';

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

describe("a call's answer", () => {
  const logs: LogEntry[] = [{ level: 'error', message: 'the last error' }];

  it("answers a PluginError's status (an error status only), code and details", () => {
    expect(statusOf({ message: 'x', status: 422 })).toBe(422);
    for (const status of [undefined, 200, 302, 600, 4.5]) expect(statusOf({ message: 'x', status })).toBe(500);
    expect(threw({ message: 'no', status: 409, code: 'TAKEN', details: { id: 1 } }, [], [])).toMatchObject({
      outcome: 'plugin_error',
      status: 409,
      data: { code: 'TAKEN', details: { id: 1 } },
      error: 'no',
    });
  });

  it('takes the message of an empty error from the last error logged, else a fixed one', () => {
    expect(threw({ message: '' }, logs, []).error).toBe('the last error');
    expect(threw({ message: '' }, [], []).error).toBe('the plugin failed without a message');
  });

  it('answers success and service-ended calls with their status', () => {
    expect(succeeded({ a: 1 }, [], [], true)).toMatchObject({ outcome: 'ok', status: 200, data: { a: 1 }, error: null, raw: true });
    expect(ended('timeout', 504, 'too slow')).toMatchObject({ status: 504, error: 'too slow', data: { code: 'TIMEOUT', details: null }, raw: false });
  });

  it('keeps at most MAX_ENTRIES lines of at most MAX_LINE characters', () => {
    const kept: LogEntry[] = [];
    expect(keepLine(kept, 'info', 'x'.repeat(MAX_LINE + 10))).toBe(true);
    expect(kept[0].message).toHaveLength(MAX_LINE + 1);
    for (let i = 1; i < MAX_ENTRIES; i++) keepLine(kept, 'log', String(i));
    expect(keepLine(kept, 'log', 'one too many')).toBe(false);
    expect(kept).toHaveLength(MAX_ENTRIES);
  });
});

describe('settings', () => {
  const file: PluginSettings = {
    timeout: 300,
    emitLogs: false,
    emitTraces: false,
    forwardLogs: false,
    rawResponse: false,
    allowGetInvocation: false,
    config: { a: 1 },
  };

  it("are the file's until changed, and a stored row that does not parse falls back to them", () => {
    expect(effective(file, undefined)).toEqual(file);
    expect(effective(file, { timeout: 'no' })).toEqual(file);
    expect(effective(file, { ...file, timeout: 5 })).toEqual({ ...file, timeout: 5 });
  });

  it('change only the fields an update names; config null removes it', () => {
    expect(applyUpdate(file, { emitLogs: true })).toEqual({ ...file, emitLogs: true });
    expect(applyUpdate(file, { config: null })).toEqual({ ...file, config: null });
    expect(settingsUpdate.safeParse({ timeout: 0 }).success).toBe(false);
    expect(settingsUpdate.safeParse({ timeout: 3601 }).success).toBe(false);
    expect(settingsUpdate.safeParse({ unknown: true }).success).toBe(false);
  });
});

describe("a REST call's params and route", () => {
  it('takes params from `params`, else the whole body', () => {
    expect(paramsOf({ params: { a: 1 }, other: 2 })).toEqual({ a: 1 });
    expect(paramsOf({ params: null })).toBeNull();
    expect(paramsOf({ a: 1 })).toEqual({ a: 1 });
    expect(paramsOf([1, 2])).toEqual([1, 2]);
  });

  it('takes the route from the path below …/call, else the route query parameter', () => {
    expect(routeOf('/verify', new URL('http://x/?route=/other'))).toBe('/verify');
    expect(routeOf('', new URL('http://x/?route=/other'))).toBe('/other');
    expect(routeOf('', new URL('http://x/'))).toBe('');
  });
});

describe("a plugin's process", () => {
  it('needs the permission model with network control: Node 20 (no --permission) and 22/24 (no --allow-net) are refused', () => {
    const flags = (...f: string[]) => new Set(f);
    expect(permissionProblem('v26.10.0', flags('--permission', '--allow-fs-read', '--allow-net', '--allow-addons'))).toBeUndefined();
    expect(permissionProblem('v24.11.0', flags('--permission', '--allow-fs-read', '--allow-addons'))).toMatch(
      /^plugins run under Node's permission model with network control .* which Node v24\.11\.0 lacks \(--allow-net\): run the service on Node 26/,
    );
    expect(permissionProblem('v20.20.2', flags('--experimental-permission'))).toContain('lacks (--permission, --allow-fs-read, --allow-net)');
    // The Node running this test is the pinned one.
    expect(permissionProblem(process.version, process.allowedNodeEnvironmentFlags)).toBeUndefined();
  });

  it("reads only the plugin's folder, the node_modules folders above it and the child script", () => {
    const exists = (p: string) => ['/srv/app/node_modules', '/srv/node_modules', '/srv/app/plugins/node_modules'].includes(p);
    expect(readsOf('/srv/app/plugins/pay.ts', exists)).toEqual([
      CHILD,
      '/srv/app/plugins',
      '/srv/app/plugins/node_modules',
      '/srv/app/node_modules',
      '/srv/node_modules',
    ]);
  });

  it("finds a service file its process could read: in the plugin's folder or below", () => {
    const reads = [CHILD, '/srv/app/plugins', '/srv/app/node_modules'];
    expect(exposed(reads, ['/srv/app/config.json', '/srv/app/data', '/srv/keys/k.json'])).toBeUndefined();
    expect(exposed(reads, ['/srv/app/config.json', '/srv/app/plugins/data'])).toEqual({ read: '/srv/app/plugins', file: '/srv/app/plugins/data' });
    expect(exposed(reads, ['/srv/app/plugins'])).toEqual({ read: '/srv/app/plugins', file: '/srv/app/plugins' });
    expect(exposed(reads, ['/srv/app/plugins-data'])).toBeUndefined();
  });

  it('grants nothing but those reads, and the network only when asked', () => {
    const args = childArgs(['/p', '/p/node_modules'], { memoryMb: 64 }, false);
    expect(args).toEqual(['--permission', '--allow-fs-read=/p', '--allow-fs-read=/p/node_modules', '--max-old-space-size=64', CHILD]);
    expect(childArgs(['/p'], { memoryMb: 64 }, true)).toContain('--allow-net');
    expect(args.filter((a) => /allow-(fs-write|child-process|worker|addons|wasi|inspector|net)/.test(a))).toEqual([]);
  });

  it('answers a refused permission 403, naming it', () => {
    expect(deniedOf({ message: 'x' })).toBeUndefined();
    const d = deniedOf({ message: 'x', denied: { permission: 'FileSystemRead', resource: '/srv/app/config.json' } })!;
    expect(deniedResult('p', d, 'Access to this API has been restricted.', [], [])).toMatchObject({
      outcome: 'denied',
      status: 403,
      error: 'plugin p was refused the FileSystemRead permission for /srv/app/config.json: Access to this API has been restricted.',
      data: { code: 'PERMISSION_DENIED', details: { permission: 'FileSystemRead', resource: '/srv/app/config.json' } },
    });
  });
});
