// SSRF guard for outgoing URLs (webhook endpoints, completion callbacks). In production (NODE_ENV=production)
// a URL must be https and must not reach a private, loopback, link-local or metadata address; WEBHOOK_ALLOW_PRIVATE
// lifts the address rule for self-hosted instances on a private network. Elsewhere both are relaxed, so a
// local instance can call http://127.0.0.1.
//
// Checked twice: the literal host when the URL is given (a 422 for the caller), and every address the name
// resolves to when a delivery connects (`guardedLookup`, the socket's own lookup, so the address checked is the
// address connected to: a name that resolves to a public address at creation and to 10.0.0.1 later is refused).
import dns from 'node:dns';
import net from 'node:net';

export interface UrlPolicy {
  /** HTTPS only. */
  httpsOnly: boolean;
  /** Refuse private, loopback, link-local and metadata addresses. */
  blockPrivate: boolean;
}

export const policyOf = (c: { production: boolean; webhookAllowPrivate: boolean }): UrlPolicy => ({
  httpsOnly: c.production,
  blockPrivate: c.production && !c.webhookAllowPrivate,
});

const blocked = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT: private in practice
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, 169.254.169.254 the cloud metadata service
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  blocked.addSubnet(net4, bits, 'ipv4');
}
blocked.addAddress('::', 'ipv6');
blocked.addAddress('::1', 'ipv6');
blocked.addSubnet('fc00::', 7, 'ipv6'); // unique local
blocked.addSubnet('fe80::', 10, 'ipv6'); // link-local

/** True for an address no production delivery may reach. */
export function blockedAddress(ip: string): boolean {
  const v = net.isIP(ip);
  if (v === 4) return blocked.check(ip, 'ipv4');
  if (v !== 6) return true;
  // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is that IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return blocked.check(mapped[1]!, 'ipv4');
  return blocked.check(ip, 'ipv6');
}

/** What is wrong with a URL under the policy, or null. Only the literal host is checked here (no DNS). */
export function urlProblem(raw: string, policy: UrlPolicy): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an absolute http(s) URL';
  if (policy.httpsOnly && u.protocol !== 'https:') return 'must use https';
  if (u.username || u.password) return 'must not carry credentials';
  if (policy.blockPrivate) {
    const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) !== 0 && blockedAddress(host))) {
      return 'must not point to a private, loopback or link-local address';
    }
  }
  return null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A drop-in for the socket's `lookup` that refuses a name when any of its addresses is blocked. */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => blockedAddress(a.address));
    if (bad || addresses.length === 0) {
      const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a blocked address (${bad?.address ?? 'none'})`);
      e.code = 'EBLOCKEDADDRESS';
      return callback(e, []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}
