// The config file's plugins as this process holds them: each compiled, with its spare worker and
// its slots (core/plugins/pool.ts runs them).
import type { Worker } from 'node:worker_threads';
import type { LogEntry } from './outcome.js';
import type { PluginConfig } from './settings.js';

export interface PluginLimits {
  concurrency: number;
  queue: number;
  memoryMb: number;
}

export interface Started {
  worker: Worker;
  /** Resolves once the plugin's code is loaded; rejects with why it could not be. */
  ready: Promise<void>;
  /** The worker's output lines before the call took it. */
  output: LogEntry[];
}

export interface LoadedPlugin {
  config: PluginConfig;
  code: string;
  spare?: Started;
  running: number;
  waiting: (() => void)[];
}

export interface Plugins {
  byId: Map<string, LoadedPlugin>;
  limits: PluginLimits;
  /** Workers running or spare, to stop them all on shutdown. */
  workers: Set<Worker>;
  stopped: boolean;
}
