import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The eight 16-bit groups of an IPv6 address (zone dropped, `::` expanded, a dotted IPv4 tail read); undefined if it is not one. */
export function ipv6Groups(address: string): number[] | undefined {
  return ipaddr.IPv6.isValid(address) ? ipaddr.IPv6.parse(address).parts : undefined;
}

/**
 * The network a client address stands for when counting abuse: an IPv4 address itself (also when
 * written IPv4-mapped, `::ffff:192.0.2.1`), and an IPv6 address's /64, because one subscriber gets
 * at least a /64 and can pick any address in it (RFC 6177; Cloudflare and GitHub rate-limit IPv6 by
 * prefix the same way). Anything else is returned as given.
 */
export function clientNetworkOf(address: string): string {
  if (isIPv4(address)) return address;
  if (!ipaddr.IPv6.isValid(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${parsed.parts
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}
