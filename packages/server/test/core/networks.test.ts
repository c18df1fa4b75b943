import { clientNetworkOf, ipv6Groups } from '../../src/core/networks';

describe('clientNetworkOf', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(clientNetworkOf('192.0.2.17')).toBe('192.0.2.17');
  });

  it('reads an IPv4-mapped IPv6 address as the IPv4 address, in either spelling', () => {
    expect(clientNetworkOf('::ffff:192.0.2.17')).toBe('192.0.2.17');
    expect(clientNetworkOf('::FFFF:c000:0211')).toBe('192.0.2.17');
  });

  it('gives every address of one IPv6 /64 the same network, however it is written', () => {
    const spellings = ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:DB8:1:2:abcd::9', 'fe80::1%eth0'.replace('fe80', '2001:db8:1:2:0')];
    expect(new Set(spellings.map(clientNetworkOf))).toEqual(new Set(['2001:db8:1:2::/64']));
  });

  it('tells neighbouring /64s apart', () => {
    expect(clientNetworkOf('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientNetworkOf('::1')).toBe('0:0:0:0::/64');
  });

  it('leaves anything that is not an address alone', () => {
    expect(clientNetworkOf('unknown')).toBe('unknown');
    expect(ipv6Groups('1.2.3.4')).toBeUndefined();
  });

  it('expands :: and dotted tails to eight groups', () => {
    expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('64:ff9b::192.0.2.33')).toEqual([0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0221]);
  });
});
