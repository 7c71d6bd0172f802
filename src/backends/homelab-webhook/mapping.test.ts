import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import { sameRecord, toHomelabRecord } from './mapping.ts';

const origin = 'Example.com.';
const rr = (owner: string, type: RecordTypeName, records: string[], ttl = 300) => ({
  owner,
  type,
  ttl,
  rdata: records.map((r) => parseRdata(type, r, origin)),
});

test('RRsets become records: domain, relative subdomain, values, TTL, metadata', () => {
  assert.deepEqual(toHomelabRecord(origin, rr('example.com.', 'A', ['192.0.2.1', '192.0.2.2'], 60)), {
    type: 'A',
    domain: 'example.com',
    subdomain: '@',
    values: ['192.0.2.1', '192.0.2.2'],
    ttl: 60,
  });
  assert.deepEqual(toHomelabRecord(origin, rr('WWW.example.com.', 'CNAME', ['web.example.net.'])), {
    type: 'CNAME',
    domain: 'example.com',
    subdomain: 'www',
    values: ['web.example.net'],
    ttl: 300,
  });
  assert.deepEqual(toHomelabRecord(origin, rr('example.com.', 'MX', ['10 mail.example.com.'])), {
    type: 'MX',
    domain: 'example.com',
    subdomain: '@',
    values: ['mail.example.com'],
    ttl: 300,
    metadata: { priority: 10 },
  });
  assert.deepEqual(
    toHomelabRecord(origin, rr('_sip._tcp.example.com.', 'SRV', ['1 2 5060 sip.example.com.'])),
    {
      type: 'SRV',
      domain: 'example.com',
      subdomain: '_sip._tcp',
      values: ['sip.example.com'],
      ttl: 300,
      metadata: { priority: 1, weight: 2, port: 5060 },
    },
  );
  const txt = toHomelabRecord(origin, rr('t.example.com.', 'TXT', ['"one" "two"', '"three"']));
  assert.ok(!('refused' in txt));
  assert.deepEqual(txt.values, ['onetwo', 'three']);
});

test('what the protocol cannot carry is refused with a reason', () => {
  assert.match(
    (toHomelabRecord(origin, rr('example.com.', 'CAA', ['0 issue "ca.example"'])) as { refused: string })
      .refused,
    /no CAA records/,
  );
  assert.match(
    (
      toHomelabRecord(origin, rr('example.com.', 'MX', ['10 a.example.com.', '20 b.example.com.'])) as {
        refused: string;
      }
    ).refused,
    /one preference/,
  );
  assert.match(
    (
      toHomelabRecord(
        origin,
        rr('_s._tcp.example.com.', 'SRV', ['1 2 5 a.example.com.', '1 2 6 b.example.com.']),
      ) as {
        refused: string;
      }
    ).refused,
    /one priority, weight and port/,
  );
});

test('read back: values as a set, TTL and metadata when the provider reports them', () => {
  const want = {
    type: 'A' as const,
    domain: 'd.com',
    subdomain: 'x',
    values: ['1.1.1.1', '2.2.2.2'],
    ttl: 60,
  };
  assert.ok(sameRecord(want, { values: ['2.2.2.2', '1.1.1.1'] }));
  assert.ok(!sameRecord(want, { values: ['2.2.2.2', '1.1.1.1'], ttl: 30 }));
  assert.ok(!sameRecord(want, { values: ['2.2.2.2'] }));
});

test('read back: the provider canonical form is the record (names, IPv6 text, metadata key order)', () => {
  const want = {
    type: 'MX' as const,
    domain: 'd.com',
    subdomain: '@',
    values: ['Mail.d.com.'],
    ttl: 60,
    metadata: { priority: 10 },
  };
  assert.ok(sameRecord(want, { values: ['mail.d.com'], ttl: 60, metadata: { priority: 10 } }));
  assert.ok(!sameRecord(want, { values: ['mail.d.com'], ttl: 60, metadata: { priority: 20 } }));
  const srv = {
    type: 'SRV' as const,
    domain: 'd.com',
    subdomain: '_s._tcp',
    values: ['t.d.com'],
    ttl: 60,
    metadata: { priority: 1, weight: 2, port: 5 },
  };
  assert.ok(
    sameRecord(srv, { values: ['T.d.com.'], ttl: 60, metadata: { port: 5, priority: 1, weight: 2 } }),
  );
  const aaaa = { type: 'AAAA' as const, domain: 'd.com', subdomain: 'x', values: ['2001:db8::1'], ttl: 60 };
  assert.ok(sameRecord(aaaa, { values: ['2001:0DB8:0:0::1'], ttl: 60 }));
});
