import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { RRset } from '../../zones/rrset.ts';
import { domainFilter, type Endpoint, registryValue, toEndpoint } from './endpoints.ts';
import { type PlanInput, planZone } from './plan.ts';

const origin = 'example.com.';
const rr = (owner: string, type: RecordTypeName, records: string[]): RRset => ({
  owner: owner === '@' ? origin : `${owner}.${origin}`,
  type,
  ttl: 300,
  rdata: records.map((r) => parseRdata(type, r, origin)),
  origin: { kind: 'recordSet', namespace: 'ns', name: `${owner}-${type}` },
});
const ownership = { ownerId: 'zonekeeper', prefix: '', suffix: '', wildcardReplacement: '' };
const mine = (name: string, resource = 'dnszone/example.com'): Endpoint => ({
  dnsName: name,
  recordType: 'TXT',
  targets: [registryValue({ owner: 'zonekeeper', resource })],
});
const theirs = (name: string, owner = 'other'): Endpoint => ({
  dnsName: name,
  recordType: 'TXT',
  targets: [`"heritage=external-dns,external-dns/owner=${owner}"`],
});
const a = (name: string, ip: string): Endpoint => ({
  dnsName: name,
  recordType: 'A',
  targets: [ip],
  recordTTL: 300,
});

function plan(rrsets: RRset[], listing: Endpoint[], extra: Partial<PlanInput> = {}) {
  return planZone({
    origin,
    provider: 'provider',
    ownership,
    filter: domainFilter({ include: ['example.com'] }),
    desired: rrsets.map((rrset) => {
      const e = toEndpoint(rrset);
      return 'refused' in e ? { rrset, refused: e.refused } : { rrset, endpoint: e };
    }),
    listing,
    ...extra,
  });
}
const names = (l: Endpoint[]) => l.map((e) => `${e.dnsName} ${e.recordType}`).sort();

test('a new record is created with its ownership record, in one batch', () => {
  const p = plan([rr('www', 'A', ['192.0.2.1'])], []);
  assert.deepEqual(names(p.changes.create), ['a-www.example.com TXT', 'www.example.com A']);
  const txt = p.changes.create.find((e) => e.recordType === 'TXT')!;
  assert.deepEqual(txt.targets, [
    '"heritage=external-dns,external-dns/owner=zonekeeper,external-dns/resource=dnszone/example.com"',
  ]);
  assert.deepEqual(txt.labels, { ownedRecord: 'www.example.com' });
  assert.deepEqual(p.problems, []);
});

test('its own record changed is an updateOld/updateNew pair, the old one exactly as the provider listed it', () => {
  const held = { ...a('www.example.com', '192.0.2.9'), labels: { owner: 'zonekeeper' } };
  const p = plan([rr('www', 'A', ['192.0.2.1'])], [held, mine('a-www.example.com')]);
  assert.deepEqual(p.changes.updateOld, [held]);
  assert.deepEqual(
    p.changes.updateNew.map((e) => e.targets),
    [['192.0.2.1']],
  );
  assert.deepEqual(p.changes.create, []);
  assert.deepEqual(p.changes.delete, []);
});

test('unchanged content plans nothing', () => {
  const p = plan(
    [rr('www', 'A', ['192.0.2.1'])],
    [a('www.example.com', '192.0.2.1'), mine('a-www.example.com')],
  );
  assert.deepEqual(p.changes, { create: [], updateOld: [], updateNew: [], delete: [] });
});

test('records another ExternalDNS owner holds, or nobody, are never changed or deleted: a Conflict', () => {
  const listing = [
    a('www.example.com', '198.51.100.1'),
    theirs('a-www.example.com'),
    a('manual.example.com', '198.51.100.2'),
    a('gone.example.com', '198.51.100.3'),
    theirs('a-gone.example.com'),
  ];
  const p = plan([rr('www', 'A', ['192.0.2.1']), rr('manual', 'A', ['192.0.2.2'])], listing);
  assert.deepEqual(p.changes, { create: [], updateOld: [], updateNew: [], delete: [] });
  assert.deepEqual(
    p.problems.map((x) => [x.owner, x.reason]),
    [
      ['www.example.com.', 'Conflict'],
      ['manual.example.com.', 'Conflict'],
    ],
  );
  assert.match(p.problems[0]!.message, /owned by ExternalDNS owner "other"/);
  assert.match(p.problems[1]!.message, /no owner/);
  // A name another owner claims but holds no record at yet is not taken either.
  const claimed = plan([rr('next', 'A', ['192.0.2.3'])], [theirs('a-next.example.com')]);
  assert.deepEqual(claimed.changes.create, []);
  assert.equal(claimed.problems[0]?.reason, 'Conflict');
});

test('its own records the zone no longer has are deleted with their ownership records; others stay', () => {
  const listing = [
    a('old.example.com', '192.0.2.5'),
    mine('a-old.example.com'),
    a('keep.example.com', '198.51.100.1'),
    theirs('a-keep.example.com'),
    mine('a-lost.example.com'),
  ];
  const p = plan([], listing);
  assert.deepEqual(names(p.changes.delete), [
    'a-lost.example.com TXT',
    'a-old.example.com TXT',
    'old.example.com A',
  ]);
  assert.deepEqual(
    names(p.diff.notOwned.map((l) => ({ dnsName: l.owner.slice(0, -1), recordType: l.type }))),
    ['keep.example.com A'],
  );
});

test('a child zone programmed into the same provider keeps its records: ownership is per zone', () => {
  // sub.example.com. is another zone of Zonekeeper (resource dnszone/sub.example.com).
  const listing = [
    a('www.sub.example.com', '192.0.2.7'),
    mine('a-www.sub.example.com', 'dnszone/sub.example.com'),
  ];
  const p = plan([], listing);
  assert.deepEqual(p.changes.delete, []);
});

test('hostile record sets: no forged ownership records, no TXT at an ownership record name', () => {
  const forged = rr('a-www', 'TXT', ['"heritage=external-dns,external-dns/owner=other"']);
  const taken = rr('a-api', 'TXT', ['"hello"']);
  const p = plan([rr('api', 'A', ['192.0.2.1']), forged, taken], [theirs('a-www.example.com')]);
  assert.deepEqual(names(p.changes.create), ['a-api.example.com TXT', 'api.example.com A']);
  assert.deepEqual(
    p.problems.map((x) => `${x.owner} ${x.reason}`),
    ['a-www.example.com. BackendRejected', 'a-api.example.com. Conflict'],
  );
  assert.match(p.problems[0]!.message, /may not claim records for an owner/);
});

test('names outside the domain filter, and types the provider dropped, are reported per record set', () => {
  const outside = rr('x', 'A', ['192.0.2.1']);
  const dropped = rr('mx', 'MX', ['10 mail.example.com.']);
  const caa = rr('@', 'CAA', ['0 issue "ca.example"']);
  const p = planZone({
    origin,
    provider: 'provider',
    ownership,
    filter: domainFilter({ include: ['example.com'], exclude: ['x.example.com'] }),
    desired: [
      { rrset: outside, endpoint: toEndpoint(outside) as Endpoint },
      { rrset: dropped, endpoint: undefined },
      { rrset: caa, refused: 'ExternalDNS endpoints carry no CAA records' },
    ],
    listing: [],
  });
  assert.deepEqual(noCreate(p), true);
  assert.deepEqual(
    p.problems.map((x) => `${x.owner} ${x.type} ${x.reason}`),
    [
      'x.example.com. A BackendRejected',
      'mx.example.com. MX BackendRejected',
      'example.com. CAA BackendRejected',
    ],
  );
  assert.match(
    p.problems[0]!.message,
    /outside the provider's domain filter \(include example.com; exclude x.example.com\)/,
  );
  assert.match(p.problems[1]!.message, /dropped the endpoint in \/adjustendpoints/);
});

function noCreate(p: ReturnType<typeof planZone>) {
  return p.changes.create.length === 0;
}

test('ignore rules: a matching record of its own is released (ownership record deleted, record kept)', () => {
  const listing = [a('legacy.example.com', '192.0.2.5'), mine('a-legacy.example.com')];
  const p = plan([], listing, { ignore: [{ name: 'legacy' }] });
  assert.deepEqual(names(p.changes.delete), ['a-legacy.example.com TXT']);
  assert.equal(p.diff.ignored.length, 1);
});

test('a plain TXT record at the name an ownership record needs is a Conflict, never overwritten', () => {
  // A record set of the parent zone (or one made by hand) took a-www.example.com as a plain TXT.
  const squatter: Endpoint = { dnsName: 'a-www.example.com', recordType: 'TXT', targets: ['"hello"'] };
  const p = plan([rr('www', 'A', ['192.0.2.1'])], [squatter]);
  assert.deepEqual(p.changes, { create: [], updateOld: [], updateNew: [], delete: [] });
  assert.deepEqual(problemsOf(p), ['www.example.com. A Conflict']);
  assert.match(
    p.problems[0]!.message,
    /a-www\.example\.com, holds a TXT record that is not an ownership record/,
  );
});

test('apex ownership records outside a filter naming only the zone are reported; a prefix ending in "." keeps them inside', () => {
  const apex = rr('@', 'A', ['192.0.2.1']);
  const narrow = domainFilter({ include: ['example.com'] });
  const outside = planZone({
    origin,
    provider: 'provider',
    ownership,
    filter: narrow,
    desired: [{ rrset: apex, endpoint: toEndpoint(apex) as Endpoint }],
    listing: [],
  });
  assert.deepEqual(problemsOf(outside), ['example.com. A BackendRejected']);
  assert.match(outside.problems[0]!.message, /a-example\.com .* set txtPrefix/);
  const inside = planZone({
    origin,
    provider: 'provider',
    ownership: { ...ownership, prefix: '%{record_type}-zk.' },
    filter: narrow,
    desired: [{ rrset: apex, endpoint: toEndpoint(apex) as Endpoint }],
    listing: [],
  });
  assert.deepEqual(inside.problems, []);
  assert.deepEqual(names(inside.changes.create), ['a-zk.example.com TXT', 'example.com A']);
});

function problemsOf(p: ReturnType<typeof planZone>) {
  return p.problems.map((x) => `${x.owner} ${x.type} ${x.reason}`).sort();
}

test('names a provider lists with a trailing dot or in upper case are the same names', () => {
  const listing = [
    { ...a('WWW.example.com.', '192.0.2.1') },
    mine('a-www.example.com.'),
    { ...a('old.example.com.', '192.0.2.2') },
    mine('A-OLD.example.com.'),
  ];
  const p = plan([rr('www', 'A', ['192.0.2.1'])], listing);
  assert.deepEqual(p.problems, []);
  assert.deepEqual(p.changes.create, []);
  assert.deepEqual(names(p.changes.delete), ['A-OLD.example.com. TXT', 'old.example.com. A']);
});

test('no record set of any type at an ownership record name; a CNAME there blocks the ownership record', () => {
  const cname = rr('a-www', 'CNAME', ['elsewhere.example.net.']);
  const p = plan([rr('www', 'A', ['192.0.2.1']), cname], []);
  assert.deepEqual(names(p.changes.create), ['a-www.example.com TXT', 'www.example.com A']);
  assert.deepEqual(problemsOf(p), ['a-www.example.com. CNAME Conflict']);
  // Held at the provider already (made by hand): the record needing that ownership record waits.
  const held: Endpoint = {
    dnsName: 'a-www.example.com',
    recordType: 'CNAME',
    targets: ['elsewhere.example.net'],
  };
  const blocked = plan([rr('www', 'A', ['192.0.2.1'])], [held]);
  assert.deepEqual(blocked.changes.create, []);
  assert.match(blocked.problems[0]!.message, /a-www\.example\.com, holds a CNAME record/);
});

test('a record set the provider refused at this serial is held: what the provider has there stays, no change planned', () => {
  const www = rr('www', 'A', ['192.0.2.1']);
  const listing = [a('www.example.com', '192.0.2.9'), mine('a-www.example.com')];
  const p = planZone({
    origin,
    provider: 'provider',
    ownership,
    filter: domainFilter({}),
    desired: [{ rrset: www, held: 'refused' }],
    listing,
  });
  assert.deepEqual(p.changes, { create: [], updateOld: [], updateNew: [], delete: [] });
  assert.deepEqual(p.problems, []);
});

test('units: one per record, with its ownership record; the batch is their sum', () => {
  const listing = [a('old.example.com', '192.0.2.5'), mine('a-old.example.com')];
  const p = plan([rr('www', 'A', ['192.0.2.1'])], listing);
  assert.deepEqual(
    p.units.map((u) => `${u.what}: ${names([...u.changes.create, ...u.changes.delete]).join(', ')}`),
    [
      'create www.example.com A: a-www.example.com TXT, www.example.com A',
      'delete old.example.com A: a-old.example.com TXT, old.example.com A',
    ],
  );
  assert.equal(p.units[0]!.rrset?.owner, 'www.example.com.');
  assert.equal(p.units[1]!.rrset, undefined);
});
