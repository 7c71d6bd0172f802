import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSRecordSet } from '../../api/index.ts';
import {
  ENDPOINT_ANNOTATION,
  EndpointError,
  endpointUpsert,
  parseEndpoint,
  quoteText,
  recordSetEndpoint,
  recordToTarget,
  targetsToRecords,
} from './endpoints.ts';

describe('ExternalDNS endpoints and record sets', () => {
  test('targets become presentation format and come back as ExternalDNS wrote them', () => {
    const cases: [string, string[], string[]][] = [
      ['A', ['192.0.2.1'], ['192.0.2.1']],
      ['CNAME', ['web.example.com'], ['web.example.com.']],
      ['MX', ['10 mx.example.com'], ['10 mx.example.com.']],
      ['SRV', ['0 50 443 svc.example.com'], ['0 50 443 svc.example.com.']],
      [
        'TXT',
        ['heritage=external-dns,external-dns/owner=a'],
        ['"heritage=external-dns,external-dns/owner=a"'],
      ],
      ['TXT', ['say "hi" \\ ok'], ['"say \\"hi\\" \\\\ ok"']],
    ];
    for (const [type, targets, records] of cases) {
      assert.deepEqual(targetsToRecords(type as 'A', targets), records, type);
      assert.deepEqual(
        records.map((r) => recordToTarget(type as 'A', r)),
        targets,
        type,
      );
    }
  });

  test('a TXT target longer than 255 octets is split into character-strings (RFC 1035 §3.3.14) and joined again', () => {
    const long = `é${'x'.repeat(300)}`;
    const quoted = quoteText(long);
    assert.equal(quoted.split('" "').length, 2);
    assert.ok(quoted.startsWith('"\\195\\169'));
    assert.equal(recordToTarget('TXT', quoted), long);
  });

  test('an upsert keeps set identifier, labels and provider-specific properties in one annotation, listed back', () => {
    const e = parseEndpoint(
      {
        dnsName: 'www.example.com',
        recordType: 'A',
        targets: ['192.0.2.1'],
        recordTTL: 60,
        setIdentifier: 'eu',
        labels: { owner: 'a' },
        providerSpecific: [{ name: 'p', value: 'v' }],
      },
      'x',
    );
    const change = endpointUpsert(e);
    assert.equal(change.op, 'upsert');
    if (change.op !== 'upsert') return;
    assert.equal(change.name, 'www.example.com.');
    assert.equal(change.ttl, 60);
    const rs: DNSRecordSet = {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'n', namespace: 'ns', annotations: change.annotations! },
      spec: { name: change.name, type: 'A', ttl: 60, records: change.records },
    };
    assert.deepEqual(recordSetEndpoint(rs), e);
    // Records changed elsewhere: the targets are read from the records.
    rs.spec.records = ['192.0.2.9'];
    assert.deepEqual(recordSetEndpoint(rs)?.targets, ['192.0.2.9']);
    assert.ok(rs.metadata.annotations?.[ENDPOINT_ANNOTATION]);
  });

  test('a TTL of 0 means unset (the zone default), and is listed back as unset', () => {
    const e = parseEndpoint(
      { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], recordTTL: 0 },
      'x',
    );
    assert.equal(e.recordTTL, undefined);
    const change = endpointUpsert(e);
    assert.ok(change.op === 'upsert' && change.ttl === undefined);
  });

  test('malformed endpoints and unserved types are refused with what to fix', () => {
    assert.throws(() => parseEndpoint({ recordType: 'A' }, 'create[0]'), /create\[0\]: dnsName is required/);
    assert.throws(() => parseEndpoint({ dnsName: 'a', recordType: 'A', targets: [1] }, 'x'), EndpointError);
    assert.throws(() => parseEndpoint({ dnsName: 'a', recordType: 'A', labels: [] }, 'x'), EndpointError);
    assert.throws(
      () =>
        endpointUpsert(parseEndpoint({ dnsName: 'a.example.com', recordType: 'SOA', targets: ['x'] }, 'x')),
      /not served here/,
    );
    assert.throws(
      () => endpointUpsert(parseEndpoint({ dnsName: 'a.example.com', recordType: 'A', targets: [] }, 'x')),
      /has targets/,
    );
  });
});
