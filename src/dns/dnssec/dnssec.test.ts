import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { p256, p384 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '../hex.ts';
import { parseRdata } from '../rdata.ts';
import { RRType } from '../rrtype.ts';
import { canonicalOrder, canonicalRdata } from './canonical.ts';
import { base32hex, nsec3Hash, typeBitmaps } from './denial.ts';
import { P256, P384, signEcdsaDeterministic } from './ecdsa.ts';
import {
  DNSKEY_FLAGS,
  dnskeyRdata,
  dsOf,
  generateDnssecKey,
  keyTag,
  parseDnskey,
  printDnskey,
} from './keys.ts';
import { printRrsigTime, rrsigLabels, signRRset, verifyRrsig } from './rrsig.ts';

describe('canonical form (RFC 4034 §6)', () => {
  test('names in MX, NS, SOA, SRV RDATA are lowercased and uncompressed; SVCB targets keep their case', () => {
    const mx = canonicalRdata(parseRdata('MX', '10 Mail.Example.COM.', 'example.com.'));
    assert.equal(
      bytesToHex(mx),
      `000a${bytesToHex(new TextEncoder().encode('\u0004mail\u0007example\u0003com\u0000'))}`,
    );
    const soa = canonicalRdata(
      parseRdata('SOA', 'NS1.example.com. Host.example.com. 1 2 3 4 5', 'example.com.'),
    );
    // Uncompressed: both names written out in full (no pointer 0xc0…).
    assert.equal(soa.length, 17 + 18 + 20);
    assert.ok(!soa.includes(0xc0));
    const svcb = canonicalRdata(parseRdata('SVCB', '1 Svc.Example.com.', 'example.com.'));
    assert.ok(new TextDecoder().decode(svcb).includes('Svc'));
  });

  test('RRs sort by RDATA octets and duplicates go (§6.3)', () => {
    const a = (t: string) => canonicalRdata(parseRdata('A', t, '.'));
    const sorted = canonicalOrder([a('192.0.2.10'), a('192.0.2.2'), a('192.0.2.10')]);
    assert.deepEqual(
      sorted.map((r) => [...r].join('.')),
      ['192.0.2.2', '192.0.2.10'],
    );
  });
});

describe('denial of existence', () => {
  test('type bit maps: the example of RFC 4034 §4.3 (A MX RRSIG NSEC TYPE1234)', () => {
    const maps = typeBitmaps([RRType.A, RRType.MX, RRType.RRSIG, RRType.NSEC, 1234]);
    const expected = new Uint8Array(2 + 6 + 2 + 27);
    expected.set([0x00, 0x06, 0x40, 0x01, 0x00, 0x00, 0x00, 0x03, 0x04, 0x1b]);
    expected[expected.length - 1] = 0x20;
    assert.deepEqual(maps, expected);
  });

  test('NSEC3 hash: the vectors of RFC 5155 Appendix A (salt aabbccdd, 12 iterations)', () => {
    const p = { iterations: 12, salt: 'aabbccdd' };
    assert.equal(base32hex(nsec3Hash('example.', p)), '0p9mhaveqvm6t7vbl5lop2u3t2rp3tom');
    assert.equal(base32hex(nsec3Hash('a.example.', p)), '35mthgpgcu1qg68fab165klnsnk3dpvl');
    assert.equal(base32hex(nsec3Hash('ns1.example.', p)), '2t7b4g4vsa5smi47k61mv5bv1a22bojr');
  });
});

describe('keys and signatures', () => {
  for (const algorithm of [13, 14, 15] as const) {
    test(`algorithm ${algorithm}: a signature verifies with node:crypto, is deterministic, and covers the RDATA`, () => {
      const key = generateDnssecKey(algorithm, DNSKEY_FLAGS.ZSK);
      const rrset = {
        owner: 'www.example.com.',
        type: RRType.A,
        ttl: 300,
        rdatas: [canonicalRdata(parseRdata('A', '192.0.2.1', '.'))],
      };
      const window = { inception: 1_700_000_000, expiration: 1_701_000_000 };
      const sig = signRRset(rrset, key, 'example.com.', window);
      assert.ok(verifyRrsig(sig, rrset, key));
      assert.deepEqual(signRRset(rrset, key, 'example.com.', window).signature, sig.signature);
      const other = { ...rrset, rdatas: [canonicalRdata(parseRdata('A', '192.0.2.2', '.'))] };
      assert.equal(verifyRrsig(sig, other, key), false);
      assert.equal(sig.keyTag, keyTag(dnskeyRdata(key)));
      assert.equal(sig.signature.length, algorithm === 14 ? 96 : 64);
    });
  }

  test('labels exclude the root and a leading wildcard (RFC 4034 §3.1.3)', () => {
    assert.equal(rrsigLabels('www.example.com.'), 3);
    assert.equal(rrsigLabels('*.example.com.'), 2);
    assert.equal(rrsigLabels('.'), 0);
  });

  test('DNSKEY presentation round trip; DS over owner and key', () => {
    const key = generateDnssecKey(13);
    const back = parseDnskey(printDnskey(key));
    assert.deepEqual(back.publicKey, key.publicKey);
    const ds = dsOf('Example.COM.', key);
    assert.deepEqual(ds, dsOf('example.com.', key));
    assert.equal(ds.digest.length, 64);
  });

  test('RRSIG times print as YYYYMMDDHHmmSS', () => {
    assert.equal(printRrsigTime(Date.UTC(2026, 10, 26, 9, 5, 7) / 1000), '20261126090507');
  });
});

describe('deterministic ECDSA (RFC 6979) with node:crypto', () => {
  test('the P-256/SHA-256 vector of RFC 6979 A.2.5 (message "sample")', () => {
    const x = hexToBytes('C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721')!;
    const [sig] = signEcdsaDeterministic(P256, x, [new TextEncoder().encode('sample')]);
    assert.equal(
      bytesToHex(sig!).toUpperCase(),
      'EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716' +
        'F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8',
    );
  });

  test('the same signatures as @noble/curves (an independent RFC 6979 implementation), one or many at once', () => {
    for (const [curve, noble] of [
      [P256, p256],
      [P384, p384],
    ] as const) {
      const { secretKey } = noble.keygen();
      const messages = Array.from({ length: 12 }, (_, i) => new Uint8Array(40 + i).fill(i));
      const batch = signEcdsaDeterministic(curve, secretKey, messages);
      messages.forEach((m, i) => {
        const theirs = noble.sign(m, secretKey, { lowS: false });
        assert.equal(bytesToHex(batch[i]!), bytesToHex(theirs), `${curve.ecdh} message ${i}`);
        assert.equal(bytesToHex(signEcdsaDeterministic(curve, secretKey, [m])[0]!), bytesToHex(theirs));
      });
    }
  });
});
