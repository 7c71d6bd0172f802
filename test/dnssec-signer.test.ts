/**
 * The zone signer checked by real DNSSEC tools: a zone with an apex, hosts, a wildcard, a CNAME, an
 * empty non-terminal, a secure delegation (DS) with glue and an insecure one, signed with each
 * algorithm and with NSEC and NSEC3 (RFC 9276 parameters), then verified by BIND's `dnssec-verify`
 * and Knot's `kzonecheck --dnssec on`; the DS compared with `dnssec-dsfromkey`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { NSEC3_RFC9276 } from '../src/dns/dnssec/denial.ts';
import {
  DNSKEY_FLAGS,
  type DnssecAlgorithm,
  dsOf,
  generateDnssecKey,
  printDnskey,
} from '../src/dns/dnssec/keys.ts';
import { parseRdata } from '../src/dns/rdata.ts';
import type { RecordTypeName } from '../src/dns/rrtype.ts';
import { type Denial, printSignedZone, signZone, type ZoneToSign } from '../src/zones/dnssec-signer.ts';
import { signatureWindow } from '../src/zones/dnssec-window.ts';
import type { RRsetData } from '../src/zones/rrset.ts';
import { removeAll, tempDir } from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const ORIGIN = 'signed.test.';

function rrset(owner: string, type: RecordTypeName, ...values: string[]): RRsetData {
  return {
    owner: `${owner === '@' ? '' : `${owner}.`}${ORIGIN}`,
    type,
    ttl: 300,
    rdata: values.map((v) => parseRdata(type, v, ORIGIN)),
  };
}

const ZONE: ZoneToSign = {
  origin: ORIGIN,
  soa: {
    ttl: 3600,
    mname: `ns1.${ORIGIN}`,
    rname: `hostmaster.${ORIGIN}`,
    serial: 2026112601,
    refresh: 3600,
    retry: 600,
    expire: 604800,
    minimum: 300,
  },
  rrsets: [
    rrset('@', 'NS', `ns1.${ORIGIN}`, `ns2.${ORIGIN}`),
    rrset('@', 'MX', `10 Mail.${ORIGIN}`),
    rrset('ns1', 'A', '192.0.2.53'),
    rrset('ns2', 'AAAA', '2001:db8::53'),
    rrset('www', 'A', '192.0.2.1', '192.0.2.2'),
    rrset('alias', 'CNAME', `www.${ORIGIN}`),
    rrset('*.wild', 'TXT', '"wildcard"'),
    rrset('deep.ent.sub', 'A', '192.0.2.7'),
    rrset('secure', 'NS', `ns.secure.${ORIGIN}`),
    rrset('secure', 'DS', '12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'),
    rrset('ns.secure', 'A', '192.0.2.99'),
    rrset('insecure', 'NS', 'ns.elsewhere.example.'),
  ],
};

describe('zone signer verified by dnssec-verify (BIND) and kzonecheck (Knot)', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir('dnssec-signer');
  });
  after(async () => removeAll(dir));

  const now = Math.floor(Date.now() / 1000);
  const window = { inception: now - 3600, expiration: now + 14 * 86400 };
  const denials: [string, Denial][] = [
    ['NSEC', { kind: 'NSEC' }],
    ['NSEC3', { kind: 'NSEC3', params: NSEC3_RFC9276 }],
  ];

  for (const algorithm of [13, 14, 15] as DnssecAlgorithm[]) {
    for (const [label, denial] of denials) {
      test(`algorithm ${algorithm}, ${label}, CSK`, async () => {
        const csk = generateDnssecKey(algorithm, DNSKEY_FLAGS.KSK);
        const records = signZone(ZONE, { keySigning: [csk], zoneSigning: [csk] }, window, denial);
        const file = path.join(dir, `csk-${algorithm}-${label}.zone`);
        await writeFile(file, printSignedZone(ORIGIN, records));
        // -z: a combined signing key has the SEP flag and signs everything.
        await run('dnssec-verify', ['-z', '-o', ORIGIN, file]);
        await run('kzonecheck', ['--dnssec', 'on', '-o', ORIGIN, file]);
        // Deterministic: the same input signs to the same bytes.
        const again = signZone(ZONE, { keySigning: [csk], zoneSigning: [csk] }, window, denial);
        assert.equal(printSignedZone(ORIGIN, again), printSignedZone(ORIGIN, records));
      });
    }
  }

  test('KSK + ZSK: the DNSKEY RRset signed by the KSK, the rest by the ZSK', async () => {
    const ksk = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
    const zsk = generateDnssecKey(13, DNSKEY_FLAGS.ZSK);
    const records = signZone(ZONE, { keySigning: [ksk], zoneSigning: [zsk] }, window, { kind: 'NSEC' });
    const file = path.join(dir, 'split.zone');
    await writeFile(file, printSignedZone(ORIGIN, records));
    await run('dnssec-verify', ['-o', ORIGIN, file]);
    await run('kzonecheck', ['--dnssec', 'on', '-o', ORIGIN, file]);
  });

  test('windows in epochs (ADR 0021): RRSIGs of one zone differ in window, and both verifiers accept them', async () => {
    const csk = generateDnssecKey(13);
    const signedAt = Math.floor(Date.now() / 1000);
    const records = signZone(
      ZONE,
      { keySigning: [csk], zoneSigning: [csk] },
      (r) => signatureWindow(signedAt, r.owner, r.type),
      { kind: 'NSEC3', params: NSEC3_RFC9276 },
    );
    const inceptions = new Set(records.filter((r) => r.type === 46).map((r) => r.text.split(' ')[5]));
    assert.ok(inceptions.size > 1, 'signatures spread over the period');
    const file = path.join(dir, 'epochs.zone');
    await writeFile(file, printSignedZone(ORIGIN, records));
    await run('dnssec-verify', ['-z', '-o', ORIGIN, file]);
    await run('kzonecheck', ['--dnssec', 'on', '-o', ORIGIN, file]);
  });

  test('a tampered record fails both verifiers (the checks above are real)', async () => {
    const csk = generateDnssecKey(13);
    const text = printSignedZone(
      ORIGIN,
      signZone(ZONE, { keySigning: [csk], zoneSigning: [csk] }, window, { kind: 'NSEC' }),
    );
    const file = path.join(dir, 'tampered.zone');
    await writeFile(file, text.replace('192.0.2.1', '192.0.2.111'));
    await assert.rejects(run('dnssec-verify', ['-z', '-o', ORIGIN, file]));
    await assert.rejects(run('kzonecheck', ['--dnssec', 'on', '-o', ORIGIN, file]));
  });

  test('the DS matches dnssec-dsfromkey', async () => {
    const ksk = generateDnssecKey(13, DNSKEY_FLAGS.KSK);
    const file = path.join(dir, 'ksk.key');
    await writeFile(file, `${ORIGIN} 3600 IN DNSKEY ${printDnskey(ksk)}\n`);
    const { stdout } = await run('dnssec-dsfromkey', ['-2', file]);
    const ds = dsOf(ORIGIN, ksk);
    assert.equal(
      stdout.trim().split(/\s+/).slice(-4).join(' ').toLowerCase(),
      `${ds.keyTag} 13 2 ${ds.digest}`.toLowerCase(),
    );
  });
});
