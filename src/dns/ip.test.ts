import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mulberry32, prng } from '../../test/support/prng.ts';
import {
  formatIPv6,
  isCanonicalHexIPv6,
  parseHexIPv6Into,
  parseIPv4,
  parseIPv6,
  parseIPv6GeneralInto,
  parseIPv6Into,
} from './ip.ts';

test('IPv4 is strict', () => {
  assert.deepEqual([...parseIPv4('192.0.2.1')!], [192, 0, 2, 1]);
  assert.deepEqual([...parseIPv4('0.0.0.0')!], [0, 0, 0, 0]);
  for (const bad of [
    '192.0.2',
    '192.0.2.1.5',
    '192.0.2.256',
    '192.0.02.1',
    '1..2.3',
    '',
    'a.b.c.d',
    ' 1.2.3.4',
    '1.2.3.4.',
  ]) {
    assert.equal(parseIPv4(bad), undefined, bad);
  }
});

test('IPv6 accepts RFC 4291 forms and prints RFC 5952', () => {
  const canon = (s: string): string => formatIPv6(parseIPv6(s)!);
  assert.equal(canon('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
  assert.equal(canon('2001:0db8:0000:0000:0001:0000:0000:0001'), '2001:db8::1:0:0:1'); // first longest run
  assert.equal(canon('2001:db8:0:0:1:0:0:0'), '2001:db8:0:0:1::'); // longer run wins
  assert.equal(canon('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1'); // single zero group not shortened
  assert.equal(canon('::'), '::');
  assert.equal(canon('::1'), '::1');
  assert.equal(canon('1::'), '1::');
  assert.equal(canon('::ffff:192.0.2.1'), '::ffff:192.0.2.1');
  assert.equal(canon('2001:db8:122:344::192.0.2.33'), '2001:db8:122:344::c000:221');
  assert.equal(canon('1:2:3:4:5:6:7:8'), '1:2:3:4:5:6:7:8');
  for (const bad of [
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    '12345::',
    'g::',
    ':1::',
    '1:2:3:4:5:6:7::8',
    '::1.2.3',
    'fe80::1%eth0',
    '',
  ]) {
    assert.equal(parseIPv6(bad), undefined, bad);
  }
});

test('IPv6: the allocation-free hex path accepts only what the general parser accepts, with the same octets', () => {
  const same = (text: string) => {
    const fast = new Uint8Array(16);
    const general = new Uint8Array(16);
    const a = parseIPv6Into(text, fast, 0);
    const b = parseIPv6GeneralInto(text, general, 0);
    assert.equal(a, b, text);
    if (a) assert.deepEqual(fast, general, text);
  };
  for (const text of [
    '::',
    '::1',
    '1::',
    '1::2',
    ':1::',
    '::1:',
    ':::',
    '1:::2',
    '1::2::3',
    '1:2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1::3:4:5:6:7:8',
    '1::2:3:4:5:6:7:8',
    '::2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7::',
    'ffff:FFFF:0:00:000:0000:abcd:ABCD',
    '12345::',
    '::ffff:192.0.2.1',
    '2001:db8::1.2.3.4',
    '1:',
    ':1',
    '',
    ':',
    'g::',
  ]) {
    same(text);
  }
  // Random text over the characters of IPv6 addresses.
  const random = mulberry32(19);
  const alphabet = '0123456789abcdefABCDEF::::..g';
  for (let i = 0; i < 50_000; i++) {
    let text = '';
    const length = random() % 24;
    for (let k = 0; k < length; k++) text += alphabet[random() % alphabet.length];
    same(text);
  }
  // Valid addresses with a gap anywhere.
  for (let groups = 0; groups <= 8; groups++) {
    for (let gap = 0; gap <= groups; gap++) {
      const hex = Array.from({ length: groups }, (_, k) => (k * 0x1111 + 7).toString(16));
      same(hex.join(':'));
      same(`${hex.slice(0, gap).join(':')}::${hex.slice(gap).join(':')}`);
    }
  }
});

test('isCanonicalHexIPv6 says whether formatIPv6 gives the text back, on listed and random text', () => {
  const bytes = new Uint8Array(16);
  const check = (text: string) => {
    if (!parseHexIPv6Into(text, bytes, 0)) return;
    assert.equal(isCanonicalHexIPv6(text, bytes, 0), formatIPv6(bytes) === text, text);
  };
  for (const text of [
    '::',
    '::1',
    '1::',
    '2001:db8::1',
    '2001:DB8::1',
    '2001:0db8::1',
    '2001:db8:0:0:1:0:0:1',
    '2001:db8::1:0:0:1',
    '2001:db8:0:0:1::1',
    '2001:db8:0:1:1:1:1:1',
    '2001:db8::1:1:1:1:1',
    '0:0:0:0:0:ffff:c000:201',
    '::ffff:c000:201',
    '::ffff:0:0',
    '1:0:0:0:0:ffff:c000:201',
    '::fffe:c000:201',
    '0::1',
    '1:0::',
    '1:2:3:4:5:6:7:8',
    'a:b:c:d:e:f:0:0',
    'a:b:c:d:e:f::',
    'fe80::',
    'FE80::',
    '00::1',
    '0:0:1::',
  ])
    check(text);
  // Random text of hex groups with zeros, leading zeros, upper case and "::" in every place.
  const random = prng(5952);
  const group = () => {
    const r = random();
    if (r < 0.4) return '0';
    if (r < 0.5) return '00';
    const v = Math.floor(random() * 0x10000).toString(16);
    return r < 0.6 ? v.toUpperCase() : r < 0.7 ? v.padStart(4, '0') : v;
  };
  for (let n = 0; n < 20_000; n++) {
    const count = 1 + Math.floor(random() * 8);
    const groups = Array.from({ length: count }, group);
    const gap = random() < 0.7 ? Math.floor(random() * (count + 1)) : -1;
    check(gap < 0 ? groups.join(':') : `${groups.slice(0, gap).join(':')}::${groups.slice(gap).join(':')}`);
  }
});
