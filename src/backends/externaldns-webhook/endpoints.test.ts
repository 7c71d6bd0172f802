import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import {
  domainFilter,
  endpointRecords,
  parseDomainFilter,
  parseEndpoints,
  registryLabels,
  registryName,
  registryValue,
  sameEndpoint,
  toEndpoint,
} from './endpoints.ts';

const rr = (owner: string, type: RecordTypeName, records: string[], ttl = 300) => ({
  owner,
  type,
  ttl,
  rdata: records.map((r) => parseRdata(type, r, 'example.com.')),
});

test('RRsets become endpoints in ExternalDNS spelling: no trailing dot, lower case, one target per record', () => {
  assert.deepEqual(toEndpoint(rr('WWW.Example.com.', 'A', ['192.0.2.2', '192.0.2.1'], 60)), {
    dnsName: 'www.example.com',
    targets: ['192.0.2.1', '192.0.2.2'],
    recordType: 'A',
    recordTTL: 60,
  });
  const targets = (type: RecordTypeName, records: string[]) =>
    (toEndpoint(rr('x.example.com.', type, records)) as { targets: string[] }).targets;
  assert.deepEqual(targets('CNAME', ['Web.Example.NET.']), ['web.example.net']);
  assert.deepEqual(targets('MX', ['10 mail.example.com.', '20 b.example.com.']), [
    '10 mail.example.com',
    '20 b.example.com',
  ]);
  assert.deepEqual(targets('SRV', ['1 2 5060 sip.example.com.']), ['1 2 5060 sip.example.com']);
  assert.deepEqual(targets('TXT', ['"v=spf1 -all"', '"two" "strings"']), [
    '"two" "strings"',
    '"v=spf1 -all"',
  ]);
  assert.deepEqual(targets('NS', ['ns1.example.net.']), ['ns1.example.net']);
  // TTL 0 is left out: ExternalDNS reads an absent recordTTL as "not configured".
  assert.equal('recordTTL' in toEndpoint(rr('x.example.com.', 'A', ['192.0.2.1'], 0)), false);
});

test('types an endpoint cannot carry are refused with what it can carry', () => {
  for (const type of ['CAA', 'ALIAS', 'HTTPS', 'SSHFP', 'DS'] as const) {
    const records = {
      CAA: ['0 issue "ca.example"'],
      ALIAS: ['lb.example.net.'],
      HTTPS: ['1 . alpn=h2'],
      SSHFP: ['1 1 0123456789abcdef0123456789abcdef01234567'],
      DS: ['1 8 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'],
    }[type];
    const e = toEndpoint(rr('x.example.com.', type, records));
    assert.ok('refused' in e, type);
    assert.match(
      e.refused,
      new RegExp(`no ${type} records \\(only A, AAAA, CNAME, TXT, SRV, NS, PTR, MX, NAPTR, TLSA\\)`),
    );
  }
});

test('read back: targets compared as records (trailing dots, case, order), TTL when reported', () => {
  const want = toEndpoint(rr('x.example.com.', 'MX', ['10 mail.example.com.'])) as never;
  assert.ok(
    sameEndpoint(want, { dnsName: 'x.example.com', recordType: 'MX', targets: ['10 Mail.example.com.'] }),
  );
  assert.ok(
    !sameEndpoint(want, { dnsName: 'x.example.com', recordType: 'MX', targets: ['20 mail.example.com'] }),
  );
  assert.ok(
    !sameEndpoint(want, {
      dnsName: 'x.example.com',
      recordType: 'MX',
      targets: ['10 mail.example.com'],
      recordTTL: 60,
    }),
  );
  // A TXT target written without quotes by another tool is one string.
  assert.deepEqual(endpointRecords({ dnsName: 't', recordType: 'TXT', targets: ['hello world'] }), [
    '"hello world"',
  ]);
});

test("ownership record names as ExternalDNS's AffixNameMapper makes them", () => {
  const plain = { prefix: '', suffix: '', wildcardReplacement: '' };
  assert.equal(registryName('www.example.com', 'A', plain), 'a-www.example.com');
  assert.equal(registryName('example.com', 'CNAME', plain), 'cname-example.com');
  assert.equal(registryName('*.apps.example.com', 'A', plain), 'a-*.apps.example.com');
  assert.equal(
    registryName('*.apps.example.com', 'A', { ...plain, wildcardReplacement: 'wild' }),
    'a-wild.apps.example.com',
  );
  assert.equal(
    registryName('www.example.com', 'AAAA', { ...plain, prefix: 'txt-' }),
    'txt-aaaa-www.example.com',
  );
  assert.equal(
    registryName('www.example.com', 'A', { ...plain, prefix: '_owner.%{record_type}.' }),
    '_owner.a.www.example.com',
  );
  assert.equal(
    registryName('www.example.com', 'TXT', { ...plain, suffix: '-own' }),
    'txt-www-own.example.com',
  );
  // ExternalDNS's advice for apex records: a templated prefix ending in "." (its docs/registry/txt.md).
  assert.equal(
    registryName('ex.com', 'CNAME', { ...plain, prefix: '%{record_type}-abc-.' }),
    'cname-abc-.ex.com',
  );
  assert.equal(
    registryName('www.ex.com', 'CNAME', { ...plain, suffix: '-.%{record_type}' }),
    'www-.cname.ex.com',
  );
});

test('ownership record values: the form ExternalDNS writes, read back with or without quotes', () => {
  const value = registryValue({ resource: 'dnszone/example.com', owner: 'zonekeeper' });
  assert.equal(
    value,
    '"heritage=external-dns,external-dns/owner=zonekeeper,external-dns/resource=dnszone/example.com"',
  );
  assert.deepEqual(registryLabels(value), { owner: 'zonekeeper', resource: 'dnszone/example.com' });
  assert.deepEqual(registryLabels('heritage=external-dns,external-dns/owner=other'), { owner: 'other' });
  assert.equal(registryLabels('"v=spf1 -all"'), undefined);
  assert.equal(registryLabels('"heritage=someone-else,external-dns/owner=x"'), undefined);
});

test("the provider's domain filter matches as ExternalDNS's DomainFilter does", () => {
  const f = domainFilter(
    parseDomainFilter({ include: ['example.com', '.sub.example.org'], exclude: ['int.example.com'] }),
  );
  assert.ok(f.match('example.com'));
  assert.ok(f.match('www.Example.com.'));
  assert.ok(!f.match('badexample.com'));
  assert.ok(!f.match('int.example.com'));
  assert.ok(!f.match('a.int.example.com'));
  assert.ok(f.match('a.sub.example.org'));
  assert.ok(!f.match('sub.example.org'), 'a leading dot matches below only');
  assert.ok(domainFilter(parseDomainFilter({})).match('anything.example'), 'no filter: every name');
  const r = domainFilter(parseDomainFilter({ regexInclude: '\\.example\\.com$', regexExclude: '^int\\.' }));
  assert.ok(r.match('a.example.com'));
  assert.ok(!r.match('int.example.com'));
  assert.throws(() => parseDomainFilter([]), /not a JSON object/);
  assert.throws(() => parseDomainFilter({ include: 'example.com' }), /include is not a list of strings/);
  assert.throws(() => domainFilter({ include: ['bücher.example'] }), /A-labels/);
});

test('a record list that is not endpoints is refused with what is wrong', () => {
  assert.throws(() => parseEndpoints({}), /not a JSON array/);
  assert.throws(() => parseEndpoints([{ recordType: 'A' }]), /endpoint 0 has no dnsName/);
  assert.throws(
    () => parseEndpoints([{ dnsName: 'a', recordType: 'A', targets: [1] }]),
    /targets that are not strings/,
  );
  assert.deepEqual(
    parseEndpoints([
      {
        dnsName: 'a.example',
        recordType: 'A',
        targets: ['192.0.2.1'],
        recordTTL: 60,
        labels: { owner: 'x' },
      },
    ]),
    [
      {
        dnsName: 'a.example',
        recordType: 'A',
        targets: ['192.0.2.1'],
        recordTTL: 60,
        labels: { owner: 'x' },
      },
    ],
  );
});
