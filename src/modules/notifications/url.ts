import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

function isPrivate(ip: string): boolean {
  if (isIP(ip) === 6) {
    const v = ip.toLowerCase();
    if (v.startsWith('::ffff:')) return isPrivate(v.slice(7));
    return v === '::1' || v === '::' || v.startsWith('fc') || v.startsWith('fd') || v.startsWith('fe8') || v.startsWith('fe9') || v.startsWith('fea') || v.startsWith('feb');
  }
  const [a, b] = ip.split('.').map(Number);
  return a === 10 || a === 127 || a === 0 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
}

/**
 * Why a webhook URL is refused, or null when it is fine. With `blockPrivate` (SSRF protection),
 * loopback, private and link-local targets are refused, checked on every address the host resolves to.
 */
export async function checkWebhookUrl(value: string, blockPrivate: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http(s) URL';
  if (url.username || url.password) return 'must not contain credentials';
  if (!blockPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return `host ${host} does not resolve`;
  }
  if (host === 'localhost' || addresses.some(isPrivate)) return 'private, loopback and link-local targets are not allowed';
  return null;
}
