import { describe, expect, it } from 'vitest';
import { deniedOf, deniedResult } from '../../../src/core/plugins/outcome.js';
import { CHILD, childArgs, exposed, permissionProblem, readsOf } from '../../../src/core/plugins/process.js';

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
