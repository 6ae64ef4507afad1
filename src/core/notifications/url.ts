import { lookup as lookupCallback, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, bits, 'ipv6');

/**
 * Loopback, private, link-local, carrier-grade NAT, multicast and reserved addresses, IPv4 and IPv6
 * (IPv4-mapped IPv6 addresses count as their IPv4 address).
 */
export function isPrivate(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return true;
  return blocked.check(ip, family === 6 ? 'ipv6' : 'ipv4');
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

export const BLOCKED_TARGET = 'EBLOCKEDTARGET';

/**
 * A DNS lookup for outgoing connections that refuses private targets. The connection uses the very
 * addresses checked here, so a host cannot resolve to a public address for the check and to a
 * private one for the connection (DNS rebinding).
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  lookupCallback(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const bad = addresses.find((a) => isPrivate(a.address));
    if (bad || addresses.length === 0) {
      const e = Object.assign(new Error(`${hostname} resolves to ${bad?.address ?? 'nothing'}: private, loopback and link-local targets are not allowed`), {
        code: BLOCKED_TARGET,
      });
      return callback(e, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
};
