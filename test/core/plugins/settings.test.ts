import { describe, expect, it } from 'vitest';
import { applyUpdate, effective, type PluginSettings, settingsUpdate } from '../../../src/core/plugins/settings.js';

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
