import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DNSKEY_FLAGS, generateDnssecKey } from '../dns/dnssec/keys.ts';
import { SignatureReuse } from '../dns/dnssec/rrsig.ts';
import { parseRdata } from '../dns/rdata.ts';
import { printSignedZone, signZone } from './dnssec-signer.ts';
import { signatureWindow } from './dnssec-window.ts';
import type { RRsetData } from './rrset.ts';

const ORIGIN = 'reuse.test.';
const SOA = {
  ttl: 3600,
  mname: 'ns1.reuse.test.',
  rname: 'hostmaster.reuse.test.',
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 60,
};
const hosts = (changed: string): RRsetData[] => [
  { owner: ORIGIN, type: 'NS', ttl: 300, rdata: [parseRdata('NS', 'ns1.reuse.test.', ORIGIN)] },
  ...Array.from({ length: 50 }, (_, i) => ({
    owner: `h${i}.${ORIGIN}`,
    type: 'A' as const,
    ttl: 300,
    rdata: [parseRdata('A', i === 25 ? changed : `192.0.2.${i}`, ORIGIN)],
  })),
];

for (const algorithm of [13, 15] as const) {
  test(`re-signing after a change takes unchanged signatures again, byte for byte (algorithm ${algorithm})`, () => {
    const key = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
    const keys = { keySigning: [key], zoneSigning: [key] };
    const signedAt = 1_800_000_000;
    const window = (r: { owner: string; type: number }) => signatureWindow(signedAt, r.owner, r.type);
    const sign = (serial: number, address: string, reuse?: SignatureReuse) =>
      printSignedZone(
        ORIGIN,
        signZone(
          { origin: ORIGIN, soa: { ...SOA, serial }, rrsets: hosts(address) },
          keys,
          window,
          { kind: 'NSEC' },
          reuse,
        ),
      );
    const reuse = new SignatureReuse();
    sign(1, '192.0.2.25', reuse);
    const first = reuse.made;
    assert.equal(reuse.reused, 0);
    const again = sign(2, '198.51.100.1', reuse);
    // The same bytes as signing everything anew.
    assert.equal(again, sign(2, '198.51.100.1'));
    // Signed again: the SOA (new serial) and the changed A RRset; the rest (NSEC chain unchanged) reused.
    assert.equal(reuse.made - first, 2);
    assert.equal(reuse.reused, first - 2);
  });
}

test('hostile churn: the reuse cache holds one signing back, never the history of a writer that keeps changing', () => {
  // A tenant who rewrites its records at every serial must not grow the signatures kept per zone:
  // a signature not taken in one signing is forgotten when that signing ends (memory bound = two signings).
  const sig = (i: number) => new Uint8Array([i & 0xff, i >> 8]);
  const reuse = new SignatureReuse();
  for (let serial = 0; serial < 100; serial++) {
    for (let i = 0; i < 10; i++) reuse.keep(`s${serial}-r${i}`, sig(serial * 10 + i));
    reuse.finish();
  }
  // Only the last signing's signatures are there to take; every earlier one is gone.
  assert.deepEqual(reuse.take('s99-r3'), sig(993));
  assert.equal(reuse.take('s98-r3'), undefined);
  assert.equal(reuse.take('s0-r0'), undefined);
  // A signature taken in a signing survives it; one not taken there is dropped at its end.
  reuse.finish(); // signing 100 took s99-r3 only
  assert.deepEqual(reuse.take('s99-r3'), sig(993));
  assert.equal(reuse.take('s99-r4'), undefined);
});

test('turning signing off: CDS 0 0 0 00 and CDNSKEY 0 3 0 AA== in place of the DS set, signed (RFC 8078 §4)', () => {
  const key = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
  const signedAt = 1_800_000_000;
  const window = (r: { owner: string; type: number }) => signatureWindow(signedAt, r.owner, r.type);
  const zone = { origin: ORIGIN, soa: { ...SOA, serial: 7 }, rrsets: hosts('192.0.2.99') };
  const text = (deleteAtParent: boolean) =>
    printSignedZone(
      ORIGIN,
      signZone(zone, { keySigning: [key], zoneSigning: [key], parent: [key], deleteAtParent }, window, {
        kind: 'NSEC',
      }),
    );
  const apex = (zoneText: string, type: string) =>
    zoneText
      .split('\n')
      .filter((l) => l.split(/\s+/)[0] === ORIGIN && l.split(/\s+/)[3] === type)
      .map((l) => l.split(/\s+/).slice(4).join(' '));
  const off = text(true);
  assert.deepEqual(apex(off, 'CDS'), ['0 0 0 00']);
  assert.deepEqual(apex(off, 'CDNSKEY'), ['0 3 0 AA==']);
  assert.deepEqual(
    apex(off, 'RRSIG')
      .map((r) => r.split(' ')[0])
      .filter((t) => t === 'CDS' || t === 'CDNSKEY')
      .sort(),
    ['CDNSKEY', 'CDS'].sort(),
  );
  const on = text(false);
  assert.notDeepEqual(apex(on, 'CDS'), ['0 0 0 00']);
  assert.equal(apex(on, 'CDS').length, 1);
});
