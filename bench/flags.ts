import { readFileSync } from 'node:fs';

/** The Node.js flags `npm start` runs the service with (package.json), so a bench measures the same. */
export function startFlags(): string[] {
  const start: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start;
  return start.split(/\s+/).filter((w) => w.startsWith('--'));
}
