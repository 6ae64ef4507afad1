import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { describeLines, nodeLines, nodeSupported } from '../../src/lib/node-line.js';

const range = '^22.15.0 || ^24.0.0 || ^26.0.0';

describe('Node.js lines from engines', () => {
  it('admits a release at or above the lowest of its line', () => {
    expect(nodeSupported(range, 'v22.15.0')).toBe(true);
    expect(nodeSupported(range, 'v22.22.1')).toBe(true);
    expect(nodeSupported(range, '24.0.0')).toBe(true);
    expect(nodeSupported(range, 'v26.10.0')).toBe(true);
  });

  it('refuses an older release of a line and the lines not named', () => {
    expect(nodeSupported(range, 'v22.14.9')).toBe(false);
    expect(nodeSupported(range, 'v20.20.2')).toBe(false);
    expect(nodeSupported(range, 'v23.11.0')).toBe(false);
    expect(nodeSupported(range, 'v27.0.0')).toBe(false);
  });

  it('names the lines for a message', () => {
    expect(describeLines(range)).toBe('22 (22.15.0 or later), 24 or 26');
    expect(describeLines('^26.0.0')).toBe('26');
  });

  it('reads only caret parts', () => {
    expect(() => nodeLines('>=22')).toThrow(/only \^x\.y\.z/);
  });

  it('admits the Node the tests run on, and package.json names it', () => {
    expect(nodeSupported(pkg.engines.node, process.version)).toBe(true);
    expect(pkg.devDependencies.node.split('.')[0]).toBe(process.versions.node.split('.')[0]);
  });
});
