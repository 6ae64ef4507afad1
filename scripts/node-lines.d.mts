// Types of what scripts/node-lines.mjs exports (test/e2e/deploy.test.ts checks the Dockerfile against them).
export const BUILT_TREE: string[];
export const PRODUCTION_INSTALL: string[];
export const START: string[];
export function supportedLines(range?: string): number[];
export function productionTree(): { dir: string; out: string };
export function fetchNode(line: number, into: string): string;
export function relayOne(node: string, tree: string): Promise<{ version: string; readyMs: number; confirmedMs: number; hash: string }>;
