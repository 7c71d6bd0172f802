import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRdata } from '../../dns/rdata.ts';
import { WriteError } from '../../writes/write-request.ts';
import {
  fromWriteError,
  HomelabError,
  parseUpsert,
  recordFromRecordSet,
  recordId,
  txtPresentation,
} from './records.ts';

const upsert = (record: Record<string, unknown>) => parseUpsert({ record, operation: 'upsert' });
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof HomelabError, String(e));
    return `${e.status} ${e.code}`;
  }
  assert.fail('expected a refusal');
};

describe('homelab records → RRset changes', () => {
  test('the owner name is subdomain.domain, "@" the domain itself; a trailing dot is optional', () => {
    assert.equal(recordId('A', 'example.com', 'www').fqdn, 'www.example.com.');
    assert.equal(recordId('A', 'example.com.', '@').fqdn, 'example.com.');
    assert.equal(
      recordId('TXT', 'example.com', '_acme-challenge.lab').fqdn,
      '_acme-challenge.lab.example.com.',
    );
    assert.equal(recordId('A', 'example.com', '*.lab').fqdn, '*.lab.example.com.');
    assert.equal(
      code(() => recordId('A', 'exa mple.com', 'www')),
      '400 INVALID_DOMAIN',
    );
    assert.equal(
      code(() => recordId('A', 'example.com', 'a..b')),
      '400 INVALID_DOMAIN',
    );
    assert.equal(
      code(() => recordId('A', 'example.com', 'www.*')),
      '400 INVALID_DOMAIN',
    );
    assert.equal(
      code(() => recordId('A', '', 'www')),
      '400 INVALID_DOMAIN',
    );
    assert.equal(
      code(() => recordId('A', 'example.com', '')),
      '400 INVALID_DOMAIN',
    );
    assert.equal(
      code(() => recordId('A', `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.com`, 'd'.repeat(63))),
      '400 INVALID_DOMAIN',
    );
  });

  test('each of the seven types; defaults: TTL 300, MX priority 10, SRV priority 0 and weight 0', () => {
    const a = upsert({
      type: 'A',
      domain: 'example.com',
      subdomain: 'www',
      values: ['192.0.2.1', '192.0.2.2'],
      ttl: 60,
    });
    assert.deepEqual(a.change, {
      op: 'upsert',
      name: 'www.example.com.',
      type: 'A',
      ttl: 60,
      records: ['192.0.2.1', '192.0.2.2'],
    });
    assert.equal(a.record.fqdn, 'www.example.com');
    assert.equal(
      upsert({ type: 'AAAA', domain: 'example.com', subdomain: 'v6', values: ['2001:db8::1'] }).change.ttl,
      300,
    );
    assert.deepEqual(
      upsert({ type: 'CNAME', domain: 'example.com', subdomain: 'alias', values: ['target.example.net'] })
        .change.records,
      ['target.example.net.'],
    );
    assert.deepEqual(
      upsert({
        type: 'NS',
        domain: 'example.com',
        subdomain: 'sub',
        values: ['ns1.example.net.', 'ns2.example.net'],
      }).change.records,
      ['ns1.example.net.', 'ns2.example.net.'],
    );
    const mx = upsert({ type: 'MX', domain: 'example.com', subdomain: '@', values: ['mail.example.com'] });
    assert.deepEqual(mx.change.records, ['10 mail.example.com.']);
    assert.deepEqual(mx.record.metadata, { priority: 10 });
    assert.deepEqual(
      upsert({ type: 'MX', domain: 'example.com', subdomain: '@', values: ['mx'], metadata: { priority: 5 } })
        .change.records,
      ['5 mx.'],
    );
    const srv = upsert({
      type: 'SRV',
      domain: 'example.com',
      subdomain: '_sip._tcp',
      values: ['sip.example.com'],
      metadata: { port: 5060 },
    });
    assert.deepEqual(srv.change.records, ['0 0 5060 sip.example.com.']);
    assert.deepEqual(srv.record.metadata, { priority: 0, weight: 0, port: 5060 });
    assert.deepEqual(
      upsert({ type: 'TXT', domain: 'example.com', subdomain: 't', values: ['v=spf1 -all', 'say "hi" \\o/'] })
        .change.records,
      ['"v=spf1 -all"', '"say \\"hi\\" \\\\o/"'],
    );
    // Unknown metadata fields and top-level fields are ignored (the extension is additive).
    assert.ok(
      parseUpsert({
        record: {
          type: 'A',
          domain: 'example.com',
          subdomain: 'x',
          values: ['192.0.2.1'],
          metadata: { foo: 1 },
        },
        operation: 'upsert',
        extra: true,
      }),
    );
    // "operation" may be left out; any other operation is refused.
    assert.ok(
      parseUpsert({ record: { type: 'A', domain: 'example.com', subdomain: 'x', values: ['192.0.2.1'] } }),
    );
  });

  test('refusals carry the protocol codes', () => {
    const base = { domain: 'example.com', subdomain: 'www' };
    assert.equal(
      code(() => parseUpsert(null)),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => parseUpsert({ record: { type: 'A', ...base, values: ['192.0.2.1'] }, operation: 'delete' })),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => upsert({ type: 'PTR', ...base, values: ['x'] })),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: ['192.0.2.1'], ttl: -1 })),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: ['192.0.2.1'], ttl: 1.5 })),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: [] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: ['192.0.2.256'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: ['2001:db8::1'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'AAAA', ...base, values: ['192.0.2.1'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: ['192.0.2.1', '192.0.2.1'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'A', ...base, values: [7] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'CNAME', ...base, values: ['a.example.com', 'b.example.com'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'CNAME', ...base, values: ['not a name'] })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'MX', ...base, values: ['mx'], metadata: { priority: 70000 } })),
      '400 INVALID_VALUE',
    );
    assert.equal(
      code(() => upsert({ type: 'SRV', ...base, values: ['sip'] })),
      '400 INVALID_RECORD',
    );
    assert.equal(
      code(() => upsert({ type: 'A', domain: 'bad_domain..com', subdomain: 'www', values: ['192.0.2.1'] })),
      '400 INVALID_DOMAIN',
    );
  });

  test('TXT values: quotes, backslashes, UTF-8 and long text survive the round trip', () => {
    const values = ['plain', 'with "quotes" and \\ backslash', 'ünïcödé ✓', 'x'.repeat(600), ''];
    const parsed = upsert({ type: 'TXT', domain: 'example.com', subdomain: 't', values });
    // Each value is one record, in strings of at most 255 octets.
    assert.equal(parsed.change.records.length, values.length);
    assert.equal(txtPresentation('x'.repeat(600)).split('" "').length, 3);
    for (const r of parsed.change.records) parseRdata('TXT', r, 'example.com.');
    const back = recordFromRecordSet(parsed.id, { ttl: 300, records: parsed.change.records });
    assert.deepEqual(back.values, values);
  });

  test('a stored record set reads back as the record that wrote it', () => {
    for (const record of [
      { type: 'A', domain: 'example.com', subdomain: 'www', values: ['192.0.2.1'], ttl: 60 },
      { type: 'AAAA', domain: 'example.com', subdomain: 'v6', values: ['2001:DB8:0::1'], ttl: 60 },
      { type: 'CNAME', domain: 'example.com', subdomain: 'c', values: ['target.example.net'], ttl: 300 },
      { type: 'NS', domain: 'example.com', subdomain: 'sub', values: ['ns1.example.net'], ttl: 300 },
      {
        type: 'MX',
        domain: 'example.com',
        subdomain: '@',
        values: ['mail.example.com'],
        ttl: 300,
        metadata: { priority: 20 },
      },
      {
        type: 'SRV',
        domain: 'example.com',
        subdomain: '_x._tcp',
        values: ['h.example.com'],
        ttl: 300,
        metadata: { priority: 1, weight: 2, port: 3 },
      },
    ]) {
      const parsed = upsert(record);
      const back = recordFromRecordSet(parsed.id, { ttl: parsed.change.ttl, records: parsed.change.records });
      assert.deepEqual(back, { ...record, fqdn: parsed.record.fqdn });
    }
  });

  test("the writer's refusals keep their codes with a fitting status", () => {
    const map = (c: ConstructorParameters<typeof WriteError>[0]) => {
      const e = fromWriteError(new WriteError(c, 'x', { retryAfterSeconds: 3 }));
      return `${e.status} ${e.code}`;
    };
    assert.equal(map('INVALID_CHANGE'), '400 INVALID_RECORD');
    assert.equal(map('NOT_DELEGATED'), '403 NOT_DELEGATED');
    assert.equal(map('NOT_OWNER'), '403 NOT_OWNER');
    assert.equal(map('NAME_CONFLICT'), '403 NAME_CONFLICT');
    assert.equal(map('QUOTA_EXCEEDED'), '403 QUOTA_EXCEEDED');
    assert.equal(map('UNKNOWN_CREDENTIAL'), '403 UNKNOWN_CREDENTIAL');
    assert.equal(map('RATE_LIMITED'), '429 RATE_LIMITED');
    assert.equal(
      fromWriteError(new WriteError('RATE_LIMITED', 'x', { retryAfterSeconds: 3 })).retryAfterSeconds,
      3,
    );
    assert.equal(map('UNAVAILABLE'), '503 UNAVAILABLE');
    assert.equal(map('REQUEST_TOO_LARGE'), '413 REQUEST_TOO_LARGE');
    // A store or Kubernetes failure: its text stays in the log, the caller gets the code and what to do.
    const internal = fromWriteError(new Error('etcdserver: request timed out (pod 10.0.0.7)'));
    assert.equal(`${internal.status} ${internal.code}`, '500 SERVER_ERROR');
    assert.doesNotMatch(internal.message, /etcd|10\.0\.0\.7/);
    assert.match(internal.message, /retry/);
  });
});
