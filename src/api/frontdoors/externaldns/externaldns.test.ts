import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ForeignObject, OutputStatus } from '../front-door.ts';
import { FrontDoors } from '../front-door.ts';
import { validateAny } from '../validate.ts';
import { type DNSEndpointSpec, type DNSEndpointStatus, dnsEndpointFrontDoor as door } from './index.ts';

type Obj = ForeignObject<DNSEndpointSpec, DNSEndpointStatus>;
const NOW = '2026-11-26T12:00:00.000Z';

const obj = (endpoints: DNSEndpointSpec['endpoints'], generation = 1, status?: DNSEndpointStatus): Obj => ({
  apiVersion: 'externaldns.k8s.io/v1alpha1',
  kind: 'DNSEndpoint',
  metadata: { name: 'e', namespace: 'team-a', generation },
  spec: { endpoints },
  ...(status ? { status } : {}),
});

const judged = (generation: number, accepted: 'True' | 'False'): OutputStatus => ({
  kind: 'DNSRecordSet',
  key: 'A:www.example.com.',
  namespace: 'team-a',
  name: 'x',
  status: {
    conditions: [
      {
        type: 'Accepted',
        status: accepted,
        reason: accepted === 'True' ? 'Accepted' : 'NotDelegated',
        message: '',
        observedGeneration: generation,
        lastTransitionTime: NOW,
      },
    ],
  },
});

describe('ExternalDNS DNSEndpoint front door', () => {
  test('each endpoint is an RRset of the namespace: absolute names, presentation format, TTL 0 = zone default', () => {
    const outputs = door.translate(
      obj([
        { dnsName: 'www.example.com', recordType: 'A', targets: ['192.0.2.1', '192.0.2.2'], recordTTL: 60 },
        { dnsName: 'alias.example.com', recordType: 'cname', targets: ['www.example.com'], recordTTL: 0 },
        { dnsName: 'txt.example.com', recordType: 'TXT', targets: ['a "b"'] },
        { dnsName: 'mx.example.com', recordType: 'MX', targets: ['10 mail.example.com'] },
        { dnsName: 'empty.example.com', recordType: 'A', targets: [] },
        // a second endpoint for the same RRset (another set identifier): the first one is served
        { dnsName: 'www.example.com', recordType: 'A', targets: ['203.0.113.1'], setIdentifier: 'us' },
      ]),
      {} as never,
    );
    assert.deepEqual(
      outputs.map((o) => [o.key, o.spec]),
      [
        [
          'A:www.example.com.',
          { name: 'www.example.com.', type: 'A', ttl: 60, records: ['192.0.2.1', '192.0.2.2'] },
        ],
        [
          'CNAME:alias.example.com.',
          { name: 'alias.example.com.', type: 'CNAME', records: ['www.example.com.'] },
        ],
        ['TXT:txt.example.com.', { name: 'txt.example.com.', type: 'TXT', records: ['"a \\"b\\""'] }],
        ['MX:mx.example.com.', { name: 'mx.example.com.', type: 'MX', records: ['10 mail.example.com.'] }],
      ],
    );
    assert.ok(
      outputs.every((o) => o.namespace === undefined),
      'outputs stay in the object namespace',
    );
  });

  test('admission: unsupported types and missing fields, with paths; upstream fields all accepted', () => {
    const doors = new FrontDoors([door as never]);
    const ok = validateAny(
      obj([
        {
          dnsName: 'www.example.com',
          recordType: 'A',
          targets: ['192.0.2.1'],
          setIdentifier: 'eu',
          labels: { owner: 'x' },
          providerSpecific: [{ name: 'aws/weight', value: '10' }],
          recordTTL: 30,
        },
      ]),
      doors,
    );
    assert.ok(ok.ok, JSON.stringify(ok));
    const bad = validateAny(
      obj([{ dnsName: 'x.example.com', recordType: 'SOA', targets: ['x'] }, { recordType: 'A' }]),
      doors,
    );
    assert.ok(!bad.ok);
    assert.deepEqual(
      bad.problems.map((p) => `${p.path} ${p.code}`),
      ['spec.endpoints[0].recordType TypeNotSupported', 'spec.endpoints[1].dnsName Required'],
    );
  });

  test('observedGeneration: once every RRset of the generation is judged, accepted or refused', () => {
    const o = obj([{ dnsName: 'www.example.com', recordType: 'A', targets: ['192.0.2.1'] }], 2, {
      observedGeneration: 1,
    });
    const project = (outputs: OutputStatus[], problems: never[] = []) =>
      door.project({ object: o, outputs, problems, now: NOW });
    assert.deepEqual(project([judged(1, 'True')]), { observedGeneration: 1 });
    assert.deepEqual(project([judged(2, 'False')]), { observedGeneration: 2 });
    assert.deepEqual(project([]), { observedGeneration: 2 });
    // A version refused at admission was not taken in.
    assert.deepEqual(project([judged(2, 'True')], [{ path: 'spec', code: 'x', message: 'x' }] as never), {
      observedGeneration: 1,
    });
  });

  test('no finalizer is held, and the CRD keeps the protected group approval', () => {
    assert.equal(door.holdsFinalizer?.(obj([])), false);
    assert.equal(
      door.crdAnnotations?.['api-approved.kubernetes.io'],
      'https://github.com/kubernetes-sigs/external-dns/pull/2007',
    );
  });
});
