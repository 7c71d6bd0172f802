import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { frontDoorCrd } from '../../crds.ts';
import { FrontDoors } from '../front-door.ts';
import { validateAny } from '../validate.ts';
import {
  DATUM_FRONT_DOORS,
  datumRecordSetFrontDoor,
  datumZoneFrontDoor,
  ownerGroups,
  presentation,
  qualifyOwner,
  qualifyTarget,
} from './index.ts';

const doors = new FrontDoors(DATUM_FRONT_DOORS);
const API = 'dns.networking.miloapis.com/v1alpha1';

function rs(recordType: string, records: Record<string, unknown>[]) {
  return {
    apiVersion: API,
    kind: 'DNSRecordSet',
    metadata: { name: 'r', namespace: 'web' },
    spec: { dnsZoneRef: { name: 'zone' }, recordType, records },
  };
}

function problems(obj: unknown, old?: unknown): string[] {
  const r = validateAny(obj, doors, old as never);
  return r.ok ? [] : r.problems.map((p) => `${p.path} ${p.code}`);
}

describe("Datum's DNS API: names", () => {
  test('owners: "@", relative, absolute with a dot, and the zone spelled out without one', () => {
    const o = 'example.com.';
    assert.equal(qualifyOwner('@', o), 'example.com.');
    assert.equal(qualifyOwner('www', o), 'www.example.com.');
    assert.equal(qualifyOwner('_acme.WWW', o), '_acme.www.example.com.');
    assert.equal(qualifyOwner('www.example.com', o), 'www.example.com.');
    assert.equal(qualifyOwner('example.com', o), 'example.com.');
    assert.equal(qualifyOwner('www.other.org.', o), 'www.other.org.');
    assert.equal(qualifyOwner('*', o), '*.example.com.');
  });

  test('targets: single labels are relative to the zone, not to the root', () => {
    const o = 'example.com.';
    assert.equal(qualifyTarget('app', o), 'app.example.com.');
    assert.equal(qualifyTarget('@', o), 'example.com.');
    assert.equal(qualifyTarget('lb.example.net', o), 'lb.example.net.');
    assert.equal(qualifyTarget('lb.example.net.', o), 'lb.example.net.');
  });

  test('entries of one owner, however spelled, are one group; outside owners are marked', () => {
    const groups = ownerGroups(
      {
        dnsZoneRef: { name: 'z' },
        recordType: 'A',
        records: [
          { name: 'www', a: { content: '192.0.2.1' } },
          { name: 'www.example.com.', a: { content: '192.0.2.2' } },
          { name: 'evil.org.', a: { content: '192.0.2.3' } },
        ],
      },
      'example.com.',
    );
    assert.deepEqual(
      groups.map((g) => [g.written, g.fqdn, g.inside, g.entries.length]),
      [
        ['www', 'www.example.com.', true, 2],
        ['evil.org.', 'evil.org.', false, 1],
      ],
    );
  });

  test('values in presentation format', () => {
    const o = 'example.com.';
    assert.equal(
      presentation('MX', { name: '@', mx: { preference: 10, exchange: 'mail' } }, o),
      '10 mail.example.com.',
    );
    assert.equal(
      presentation(
        'SRV',
        { name: '_sip._tcp', srv: { priority: 1, weight: 2, port: 5060, target: 'sip' } },
        o,
      ),
      '1 2 5060 sip.example.com.',
    );
    assert.equal(
      presentation('CAA', { name: '@', caa: { flag: 0, tag: 'issue', value: 'ca.example' } }, o),
      '0 issue "ca.example"',
    );
    assert.equal(presentation('TXT', { name: '@', txt: { content: 'say "hi"' } }, o), '"say \\"hi\\""');
    const long = presentation('TXT', { name: '@', txt: { content: 'x'.repeat(300) } }, o)!;
    assert.equal(long, `"${'x'.repeat(255)}" "${'x'.repeat(45)}"`);
    assert.equal(
      presentation(
        'TLSA',
        { name: '_443._tcp', tlsa: { usage: 3, selector: 1, matchingType: 1, certData: 'ab' } },
        o,
      ),
      '3 1 1 ab',
    );
    assert.equal(
      presentation(
        'SVCB',
        { name: '_dns', svcb: { priority: 1, target: 'dns', params: { port: '853', alpn: 'dot' } } },
        o,
      ),
      '1 dns.example.com. alpn=dot port=853',
    );
  });
});

describe("Datum's DNS API: validation and admission", () => {
  test('a typed field must match recordType, exactly one per entry', () => {
    assert.deepEqual(problems(rs('A', [{ name: 'www', a: { content: '192.0.2.1' } }])), []);
    assert.deepEqual(problems(rs('A', [{ name: 'www', txt: { content: 'x' } }])), [
      'spec.records[0] TypeFieldMismatch',
    ]);
    assert.deepEqual(problems(rs('A', [{ name: 'www' }])), ['spec.records[0] TypeFieldMismatch']);
    assert.deepEqual(
      problems(rs('A', [{ name: 'www', a: { content: '192.0.2.1' }, aaaa: { content: '::1' } }])),
      ['spec.records[0] TypeFieldMismatch'],
    );
  });

  test('SOA is not served; TTLs of one owner must agree; the owner pattern and the zone reference', () => {
    assert.deepEqual(problems(rs('SOA', [{ name: '@', soa: { mname: 'ns1', rname: 'hostmaster' } }])), [
      'spec.recordType SOANotServed',
    ]);
    assert.deepEqual(
      problems(
        rs('A', [
          { name: 'www', ttl: 60, a: { content: '192.0.2.1' } },
          { name: 'www', ttl: 120, a: { content: '192.0.2.2' } },
        ]),
      ),
      ['spec.records[1].ttl TTLsDiffer'],
    );
    assert.equal(problems(rs('A', [{ name: 'w w', a: { content: '192.0.2.1' } }])).length, 1);
    const noZone = { ...rs('A', [{ name: 'www', a: { content: '192.0.2.1' } }]) };
    noZone.spec = { ...noZone.spec, dnsZoneRef: { name: '' } };
    assert.deepEqual(problems(noZone), ['spec.dnsZoneRef DNSZoneRefNameEmpty']);
  });

  test('a zone: lowercase, two labels at least, domainName immutable', () => {
    const z = (domainName: string) => ({
      apiVersion: API,
      kind: 'DNSZone',
      metadata: { name: 'z', namespace: 'web' },
      spec: { domainName },
    });
    assert.deepEqual(problems(z('example.com')), []);
    assert.deepEqual(problems(z('com')), ['spec.domainName DomainNameOneSegment']);
    assert.equal(problems(z('Example.com')).length, 1);
    const old = validateAny(z('example.com'), doors);
    assert.ok(old.ok && old.door);
    assert.deepEqual(problems(z('example.org'), old.foreign), ['spec.domainName DomainNameImmutable']);
  });

  test("the CRDs keep Datum's printer columns and selectable fields", () => {
    const zone = frontDoorCrd(datumZoneFrontDoor) as {
      spec: { versions: { selectableFields: unknown; additionalPrinterColumns: { name: string }[] }[] };
    };
    assert.deepEqual(zone.spec.versions[0]!.selectableFields, [
      { jsonPath: '.spec.domainName' },
      { jsonPath: '.status.domainRef.name' },
    ]);
    assert.deepEqual(
      zone.spec.versions[0]!.additionalPrinterColumns.map((c) => c.name),
      ['Accepted', 'Programmed', 'Records'],
    );
    const set = frontDoorCrd(datumRecordSetFrontDoor) as {
      spec: { versions: { selectableFields: unknown }[] };
    };
    assert.deepEqual(set.spec.versions[0]!.selectableFields, [
      { jsonPath: '.spec.dnsZoneRef.name' },
      { jsonPath: '.spec.recordType' },
    ]);
  });
});
