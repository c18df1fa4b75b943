import { isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of an IPv6 address (zone dropped, `::` expanded, a dotted IPv4 tail read); undefined if it is not one. */
export function ipv6Groups(address: string): number[] | undefined {
  const bare = address.split('%')[0] ?? '';
  if (!isIPv6(bare)) return undefined;
  let text = bare.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (side: string) => (side === '' ? [] : side.split(':').map((group) => Number.parseInt(group, 16)));
  if (tail === undefined) return part(head);
  const left = part(head);
  const right = part(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The network a client address stands for when counting abuse: an IPv4 address itself (also when
 * written IPv4-mapped, `::ffff:192.0.2.1`), and an IPv6 address's /64, because one subscriber gets
 * at least a /64 and can pick any address in it (RFC 6177; Cloudflare and GitHub rate-limit IPv6 by
 * prefix the same way). Anything else is returned as given.
 */
export function clientNetworkOf(address: string): string {
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  const isMapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (isMapped) {
    const [high = 0, low = 0] = groups.slice(6);
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}
