// Which Node.js releases package.json's `engines.node` admits. Only the form the project writes is
// read: caret parts joined by `||`, e.g. `^22.15.0 || ^24.0.0 || ^26.0.0`.

type Version = [number, number, number];

function parse(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  if (!m) throw new Error(`not a Node.js version: ${text}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** The lowest release of each line a range admits, e.g. `^22.15.0 || ^24.0.0` gives [[22,15,0],[24,0,0]]. */
export function nodeLines(range: string): Version[] {
  return range.split('||').map((part) => {
    const p = part.trim();
    if (!p.startsWith('^')) throw new Error(`engines.node: only ^x.y.z parts are read, not ${p}`);
    return parse(p.slice(1));
  });
}

/** Whether `version` (e.g. `v26.10.0`) falls in one of the range's lines at or above its lowest release. */
export function nodeSupported(range: string, version: string): boolean {
  const [major, minor, patch] = parse(version);
  return nodeLines(range).some(([m, n, p]) => major === m && (minor > n || (minor === n && patch >= p)));
}

/** The lines for a message: `22 (22.15.0 or later), 24 or 26`. */
export function describeLines(range: string): string {
  const names = nodeLines(range).map(([m, n, p]) => (n === 0 && p === 0 ? `${m}` : `${m} (${m}.${n}.${p} or later)`));
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}
