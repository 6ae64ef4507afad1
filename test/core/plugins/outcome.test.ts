import { describe, expect, it } from 'vitest';
import { ended, keepLine, type LogEntry, MAX_ENTRIES, MAX_LINE, statusOf, succeeded, threw } from '../../../src/core/plugins/outcome.js';

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
