import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { zoneClass } from '../../test/support/resources.ts';
import { type DNSRecordSet, type Resource, validateResource } from '../api/index.ts';
import { printRdata } from '../dns/rdata.ts';
import { parseZoneFile } from '../dns/zone-file-parser.ts';
import { computeZones } from './compute-zones.ts';
import { printZoneFile } from './zone-file.ts';
import { importZone, type ZoneImportOptions, zoneImportYaml, zoneResourceName } from './zone-import.ts';

const NOW = new Date(Date.UTC(2026, 0, 15));

function importText(text: string, options: Partial<ZoneImportOptions> = {}) {
  const parsed = parseZoneFile(text, { origin: 'example.com.', file: 'db' });
  assert.deepEqual(
    parsed.problems.filter((p) => p.severity === 'error'),
    [],
  );
  return importZone(parsed.records, { zone: 'example.com', namespace: 'dns', now: NOW, ...options });
}

function codes(result: { problems: { code: string }[] }): string[] {
  return result.problems.map((p) => p.code);
}

/** The spec of each record set without its owner name, under the resource name. */
function specs(recordSets: DNSRecordSet[]) {
  return recordSets.map(({ metadata, spec: { name: _owner, ...spec } }) => ({
    name: metadata.name,
    ...spec,
  }));
}

const ZONE = `$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 2024010101 7200 900 1209600 600
  IN NS ns1
  IN NS ns2.example.net.
  IN MX 10 mail
ns1 IN A 192.0.2.53
www 300 IN A 192.0.2.1
www 300 IN A 192.0.2.2
*.apps IN CNAME www
_sip._tcp IN SRV 10 60 5060 sip
`;

describe('importZone', () => {
  test('a DNSZone from the SOA and $TTL, a DNSRecordSet per RRset with relative names', () => {
    const r = importText(ZONE);
    assert.deepEqual(r.zone, {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: 'example-com', namespace: 'dns' },
      spec: {
        domainName: 'example.com',
        className: 'builtin',
        ttl: 3600,
        soa: { rname: 'hostmaster.example.com.', refresh: 7200, retry: 900, expire: 1209600, minimum: 600 },
      },
    });
    const ref = { name: 'example-com' };
    assert.deepEqual(specs(r.recordSets), [
      { name: 'example-com-apex-mx', zoneRef: ref, type: 'MX', records: ['10 mail.example.com.'] },
      {
        name: 'example-com-sip-tcp-srv',
        zoneRef: ref,
        type: 'SRV',
        records: ['10 60 5060 sip.example.com.'],
      },
      { name: 'example-com-star-apps-cname', zoneRef: ref, type: 'CNAME', records: ['www.example.com.'] },
      { name: 'example-com-ns1-a', zoneRef: ref, type: 'A', records: ['192.0.2.53'] },
      { name: 'example-com-www-a', zoneRef: ref, type: 'A', ttl: 300, records: ['192.0.2.1', '192.0.2.2'] },
    ]);
  });

  test('the owner names are relative, "@" for the apex', () => {
    const r = importText(ZONE);
    assert.deepEqual(
      r.recordSets.map((s) => s.spec.name),
      ['@', '_sip._tcp', '*.apps', 'ns1', 'www'],
    );
  });

  test('SOA serial, MNAME and apex NS are not imported but reported as notes', () => {
    const r = importText(ZONE);
    assert.deepEqual(codes(r), ['SOA_SERIAL_NOT_IMPORTED', 'SOA_MNAME_FROM_CLASS', 'APEX_NS_FROM_CLASS']);
    assert.ok(r.problems.every((p) => p.severity === 'note' && !p.skipped));
    assert.deepEqual(
      r.problems.map((p) => p.line),
      [2, 2, 3],
    );
  });

  test('with the class known, MNAME and apex NS are compared with its nameServers', () => {
    const same = importText(ZONE, { classNameServers: ['ns1.example.com.', 'ns2.example.net.'] });
    assert.deepEqual(codes(same), ['SOA_SERIAL_NOT_IMPORTED']);
    const other = importText(ZONE, { classNameServers: ['a.example.org.'] });
    assert.deepEqual(codes(other), ['SOA_SERIAL_NOT_IMPORTED', 'SOA_MNAME_DIFFERS', 'APEX_NS_DIFFERS']);
    assert.match(other.problems[2]!.message, /which are a\.example\.org\./);
  });

  test('a serial ahead of the date serial is a warning', () => {
    const r = importText(ZONE.replace('2024010101', '2099010100'));
    const p = r.problems.find((x) => x.code === 'SOA_SERIAL_NOT_IMPORTED')!;
    assert.equal(p.severity, 'warning');
    assert.match(p.message, /ahead of the date serial 2026011500/);
  });

  test('--class, --name and --prefix', () => {
    const r = importText(ZONE, { className: 'edge', name: 'main', prefix: '' });
    assert.equal(r.zone.metadata.name, 'main');
    assert.equal(r.zone.spec.className, 'edge');
    assert.deepEqual(
      r.recordSets.map((s) => [s.metadata.name, s.spec.zoneRef?.name]),
      [
        ['apex-mx', 'main'],
        ['sip-tcp-srv', 'main'],
        ['star-apps-cname', 'main'],
        ['ns1-a', 'main'],
        ['www-a', 'main'],
      ],
    );
  });

  test('colliding and overlong resource names get a short hash', () => {
    const long = 'a'.repeat(63);
    const r = importText(`$TTL 1\n_x IN A 192.0.2.1\nx IN A 192.0.2.2\n${long} IN A 192.0.2.3\n`, {
      prefix: '',
    });
    const names = r.recordSets.map((s) => s.metadata.name);
    assert.equal(new Set(names).size, 3);
    for (const n of names) {
      assert.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      assert.ok(n.length <= 63, n);
    }
    assert.match(names[0]!, /^x-a-[0-9a-f]{6}$/);
    assert.match(names[1]!, /^aaaa+-[0-9a-f]{6}$/);
    assert.match(names[2]!, /^x-a-[0-9a-f]{6}$/);
    // Deterministic.
    assert.deepEqual(
      importText(`$TTL 1\n_x IN A 192.0.2.1\nx IN A 192.0.2.2\n${long} IN A 192.0.2.3\n`, {
        prefix: '',
      }).recordSets.map((s) => s.metadata.name),
      names,
    );
  });

  test('zone resource names', () => {
    assert.equal(zoneResourceName('example.com.'), 'example-com');
    assert.equal(zoneResourceName('2.0.192.in-addr.arpa'), '2-0-192-in-addr-arpa');
    assert.equal(zoneResourceName('_acme-challenge.Example.COM.'), 'acme-challenge-example-com');
  });

  test('delegations keep NS and glue; occluded data and data at the cut are skipped', () => {
    const r = importText(
      [
        '$TTL 60',
        'sub NS ns.sub',
        'sub NS ns.elsewhere.net.',
        'sub DS 60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a',
        'sub A 192.0.2.7',
        'ns.sub A 192.0.2.8',
        'ns.sub AAAA 2001:db8::8',
        'www.sub A 192.0.2.9',
        'deep.sub NS ns.deep.sub',
      ].join('\n'),
    );
    assert.deepEqual(
      r.recordSets.map((s) => `${s.spec.name} ${s.spec.type}`),
      ['sub NS', 'sub DS', 'ns.sub A', 'ns.sub AAAA'],
    );
    assert.deepEqual(
      r.problems.filter((p) => p.skipped).map((p) => [p.line, p.code, p.severity]),
      [
        [5, 'AT_DELEGATION', 'warning'],
        [8, 'OCCLUDED', 'warning'],
        [9, 'OCCLUDED', 'warning'],
      ],
    );
    assert.ok(codes(r).includes('DELEGATION'));
  });

  test('a managed child zone replaces the delegation: its NS and glue are left out', () => {
    const r = importText(
      '$TTL 60\nsub NS ns.sub\nns.sub A 192.0.2.8\nsub DS 1 13 2 ' + 'ab'.repeat(32) + '\n',
      {
        managedChildZones: ['sub.example.com'],
      },
    );
    assert.deepEqual(
      r.recordSets.map((s) => `${s.spec.name} ${s.spec.type}`),
      ['sub DS'],
    );
    assert.deepEqual(
      r.problems.map((p) => [p.code, p.severity, p.skipped ?? false]),
      [
        ['MANAGED_CHILD_ZONE', 'note', false],
        ['MANAGED_CHILD_ZONE', 'note', false],
        ['NO_SOA', 'warning', false],
        ['NO_APEX_NS', 'note', false],
      ],
    );
  });

  test('what a Zonekeeper zone cannot hold: CNAME at the apex, DS at the apex, SOA below it, CNAME beside data', () => {
    const r = importText(
      [
        '$TTL 60',
        '@ CNAME other.example.net.',
        '@ DS 1 13 2 ' + 'ab'.repeat(32),
        'x SOA ns1 h 1 2 3 4 5',
        'both CNAME www',
        'both TXT "t"',
        'al ALIAS www',
        'al A 192.0.2.1',
      ].join('\n'),
    );
    assert.deepEqual(
      r.problems.filter((p) => p.skipped).map((p) => [p.line, p.code, p.severity]),
      [
        [2, 'CNAME_AT_APEX', 'warning'],
        [3, 'DS_AT_APEX', 'warning'],
        [4, 'SOA_NOT_AT_APEX', 'error'],
        [5, 'CNAME_AND_OTHER_DATA', 'error'],
        [7, 'ALIAS_AND_ADDRESS', 'error'],
      ],
    );
    assert.deepEqual(
      r.recordSets.map((s) => `${s.spec.name} ${s.spec.type}`),
      ['al A', 'both TXT'],
    );
  });

  test('RRsets: records grouped by owner (any case) and type; duplicates dropped; TTL mismatch takes the lowest', () => {
    const r = importText(
      '$TTL 60\nwww A 192.0.2.1\nWWW 30 A 192.0.2.2\nwww A 192.0.2.1\nother.test. A 192.0.2.3\n',
    );
    assert.deepEqual(specs(r.recordSets), [
      {
        name: 'example-com-www-a',
        zoneRef: { name: 'example-com' },
        type: 'A',
        records: ['192.0.2.1', '192.0.2.2'],
      },
    ]);
    assert.equal(r.zone.spec.ttl, 30);
    assert.deepEqual(
      r.problems.map((p) => [p.line, p.code]),
      [
        [3, 'TTL_MISMATCH'],
        [4, 'DUPLICATE_RECORD'],
        [5, 'OUT_OF_ZONE'],
        [undefined, 'NO_SOA'],
        [undefined, 'NO_APEX_NS'],
      ],
    );
  });

  test('without an SOA the zone TTL is the most common TTL; TTL 0 is raised to 1', () => {
    const r = importText('a 60 A 192.0.2.1\nb 60 A 192.0.2.2\nc 0 A 192.0.2.3\n');
    assert.equal(r.zone.spec.ttl, 60);
    assert.deepEqual(
      r.recordSets.map((s) => s.spec.ttl),
      [undefined, undefined, 1],
    );
    assert.ok(codes(r).includes('TTL_RAISED'));
  });

  test('a file for another zone is an error, not an empty import', () => {
    const parsed = parseZoneFile('$TTL 1\n@ SOA ns1 h 1 2 3 4 5\nwww A 192.0.2.1\n', {
      origin: 'example.org.',
    });
    const r = importZone(parsed.records, { zone: 'example.com', namespace: 'dns' });
    const p = r.problems.find((x) => x.code === 'ZONE_MISMATCH');
    assert.equal(p?.severity, 'error');
    assert.match(
      p.message,
      /none of the 2 records is in zone example\.com\. \(the first is example\.org\.\); check --zone/,
    );
  });

  test('a zone name the API rejects is reported, not thrown', () => {
    const parsed = parseZoneFile('$TTL 1\n@ A 192.0.2.1\n', { origin: 'com.' });
    const r = importZone(parsed.records, { zone: 'com', namespace: 'dns' });
    assert.ok(codes(r).includes('RESOURCE_INVALID'));
  });

  test('the YAML is multi-document, stable, starts with the header and validates', () => {
    const r = importText(ZONE);
    const text = zoneImportYaml(r, ['example.com. imported from db', '']);
    assert.ok(text.startsWith('# example.com. imported from db\n#\napiVersion:'));
    assert.equal(zoneImportYaml(importText(ZONE), ['example.com. imported from db', '']), text);
    const docs = parseAllDocuments(text);
    assert.ok(Array.isArray(docs));
    const values = docs.map((d) => d.toJS() as unknown);
    assert.equal(values.length, 1 + r.recordSets.length);
    for (const v of values) assert.ok(validateResource(v).ok, JSON.stringify(v));
    assert.match(text, /name: "@"/);
    assert.match(text, /name: "\*\.apps"/);
  });

  test('round trip: file → resources → the zone Zonekeeper assembles holds the same records', () => {
    const file = [
      '$ORIGIN example.com.',
      '$TTL 300',
      '@ SOA ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 300',
      '@ NS ns1.example.com.',
      '@ NS ns2.example.com.',
      '@ 60 TXT "v=spf1 -all" "x"',
      '@ ALIAS www',
      '@ CAA 0 issue "ca.example"',
      'ns1 A 192.0.2.53',
      'ns2 A 192.0.2.54',
      'www A 192.0.2.1',
      'www AAAA 2001:db8::1',
      'sub NS ns.sub',
      'ns.sub A 192.0.2.77',
      '*.wild A 192.0.2.99',
      '10 PTR www',
      'a\\.b TXT "escaped"',
    ].join('\n');
    const parsed = parseZoneFile(file, { file: 'db' });
    assert.deepEqual(parsed.problems, []);
    const r = importZone(parsed.records, { zone: 'example.com', namespace: 'dns', now: NOW });
    const klass = zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.']);
    const resources: Resource[] = [klass, r.zone, ...r.recordSets].map((x) => {
      const v = validateResource(x);
      assert.ok(v.ok, JSON.stringify(x));
      return v.resource;
    });
    const [computed] = computeZones(resources);
    assert.ok(computed);
    assert.deepEqual(
      [...computed.zone.verdicts.values()].filter((v) => !v.accepted),
      [],
    );
    const printed = parseZoneFile(printZoneFile(computed.zone, 1), { file: 'out' });
    const canon = (records: typeof parsed.records) =>
      records.map((x) => `${x.owner.toLowerCase()} ${x.ttl} ${x.type} ${printRdata(x.rdata)}`).sort();
    assert.deepEqual(canon(printed.records), canon(parsed.records));
  });
});
