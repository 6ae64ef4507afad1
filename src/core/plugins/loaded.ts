// The config file's plugins as this process holds them: each compiled, with its started processes
// and its slots (core/plugins/pool.ts runs them, core/plugins/process.ts starts them).
import type { ChildProcess } from 'node:child_process';
import type { LogEntry } from './outcome.js';
import type { PluginConfig } from './settings.js';

export interface PluginLimits {
  concurrency: number;
  queue: number;
  memoryMb: number;
  /** Started processes kept per plugin (PLUGIN_POOL_SIZE). */
  poolSize: number;
}

/** A plugin process. */
export interface Started {
  child: ChildProcess;
  /** Resolves once the plugin's code is loaded; rejects with why it could not be. */
  ready: Promise<void>;
  /** The process's output lines before a call took it. */
  output: LogEntry[];
  /** Node reported the heap limit reached (on stderr) before the process died. */
  outOfMemory: boolean;
  /** Calls it served; each call's messages carry its number. */
  calls: number;
  /** Where its output lines go while a call has it (else to `output`). */
  sink?: (level: string, message: string) => void;
}

export interface LoadedPlugin {
  config: PluginConfig;
  code: string;
  /** The folders and files its process may read (the permission model's --allow-fs-read). */
  reads: string[];
  /** Processes started and not serving a call, the most recently used last. */
  idle: Started[];
  /** Every process of the plugin: starting, idle or serving. */
  procs: Set<Started>;
  running: number;
  waiting: (() => void)[];
}

export interface Plugins {
  byId: Map<string, LoadedPlugin>;
  limits: PluginLimits;
  /** Plugin processes started and not yet exited, of every plugin, to stop them all on shutdown. */
  workers: Set<ChildProcess>;
  stopped: boolean;
}
