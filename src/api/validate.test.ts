import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  exampleRecordSet,
  exampleZone,
  exampleZoneClass,
  invalidCases,
  validCases,
} from '../../test/support/api-examples.ts';
import { formatProblem, type Resource, validateResource } from './index.ts';

function oldResource(old: Record<string, unknown> | undefined): Resource | undefined {
  if (old === undefined) return undefined;
  const result = validateResource(old);
  assert.ok(result.ok, 'the old object of a case must be valid');
  return result.resource;
}

describe('validateResource: valid manifests', () => {
  for (const c of validCases()) {
    it(c.name, () => {
      const result = validateResource(c.object, oldResource(c.old));
      assert.deepEqual(result.ok ? [] : result.problems.map(formatProblem), []);
    });
  }

  it('returns a clean copy: namespace defaulted, nulls and status dropped, input untouched', () => {
    const input = exampleRecordSet();
    const metadata = input.metadata as Record<string, unknown>;
    delete metadata.namespace;
    metadata.managedFields = [{ manager: 'kubectl' }];
    (input.spec as Record<string, unknown>).ttl = null;
    input.status = { fqdn: 'www.example.com.' };
    const before = structuredClone(input);
    const result = validateResource(input);
    assert.ok(result.ok);
    assert.deepEqual(input, before);
    assert.deepEqual(result.resource, {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'www', namespace: 'default' },
      spec: { zoneRef: { name: 'example-com' }, name: 'www', type: 'A', records: ['192.0.2.1', '192.0.2.2'] },
    });
  });

  it('does not default a namespace on cluster-scoped kinds', () => {
    const result = validateResource(exampleZoneClass());
    assert.ok(result.ok);
    assert.equal(result.resource.metadata.namespace, undefined);
  });

  it('keeps metadata it knows', () => {
    const input = exampleZone();
    input.metadata = {
      name: 'example-com',
      namespace: 'dns',
      uid: 'u-1',
      generation: 3,
      resourceVersion: '42',
      creationTimestamp: '2024-01-01T00:00:00Z',
      labels: { 'app.kubernetes.io/name': 'web' },
      annotations: { 'example.com/note': 'anything goes here' },
      finalizers: ['dns.zonekeeper.dev/finalizer'],
    };
    const result = validateResource(input);
    assert.ok(result.ok);
    assert.deepEqual(result.resource.metadata, input.metadata);
  });

  it('keeps and validates status when asked', () => {
    const input = exampleZone();
    input.status = {
      serial: 2024010100,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: '',
          lastTransitionTime: '2024-01-01T00:00:00Z',
        },
      ],
    };
    const kept = validateResource(input, undefined, { keepStatus: true });
    assert.ok(kept.ok);
    assert.deepEqual(kept.resource.status, input.status);
    (input.status as Record<string, unknown>).serial = -1;
    const bad = validateResource(input, undefined, { keepStatus: true });
    assert.ok(!bad.ok);
    assert.deepEqual(bad.problems.map(formatProblem), ['status.serial: -1 is below the minimum 0']);
  });
});

describe('validateResource: each rule rejects with path, code and message', () => {
  for (const c of invalidCases()) {
    it(c.name, () => {
      const result = validateResource(c.object, oldResource(c.old));
      assert.ok(!result.ok, 'expected problems');
      assert.deepEqual(
        result.problems.map((p) => ({ path: p.path, code: p.code })),
        c.problems.map((p) => ({ path: p.path, code: p.code })),
        result.problems.map(formatProblem).join('\n'),
      );
      c.problems.forEach((expected, i) => {
        const message = result.problems[i]?.message ?? '';
        assert.ok(
          message.includes(expected.message),
          `message ${JSON.stringify(message)} lacks ${expected.message}`,
        );
      });
    });
  }

  it('names the kind and object on failure', () => {
    const input = exampleRecordSet();
    (input.spec as Record<string, unknown>).type = 'SOA';
    const result = validateResource(input);
    assert.ok(!result.ok);
    assert.equal(result.kind, 'DNSRecordSet');
    assert.equal(result.name, 'www');
  });

  it('rejects non-objects and missing parts', () => {
    const notObject = validateResource('kind: DNSZone');
    assert.ok(!notObject.ok);
    assert.deepEqual(notObject.problems[0]?.code, 'INVALID_TYPE');
    const bare = validateResource({ apiVersion: 'dns.zonekeeper.dev/v1alpha1', kind: 'DNSZone' });
    assert.ok(!bare.ok);
    assert.deepEqual(
      bare.problems.map((p) => p.path),
      ['metadata', 'spec'],
    );
    const noKind = validateResource({ metadata: { name: 'x' }, spec: {} });
    assert.ok(!noKind.ok);
    assert.deepEqual(noKind.problems.map(formatProblem), [
      'apiVersion: required; set apiVersion: dns.zonekeeper.dev/v1alpha1',
      'kind: required; one of DNSZoneClass, DNSZone, DNSRecordSet, Domain',
    ]);
  });

  it('checks label keys and values', () => {
    const input = exampleZone();
    (input.metadata as Record<string, unknown>).labels = { 'bad key!': 'x', ok: 'not ok!' };
    const result = validateResource(input);
    assert.ok(!result.ok);
    assert.deepEqual(
      result.problems.map((p) => p.path),
      ['metadata.labels[bad key!]', 'metadata.labels[ok]'],
    );
  });

  it('runs transition rules only on update and only for the same kind', () => {
    const renamed = exampleZone();
    (renamed.spec as Record<string, unknown>).domainName = 'example.org';
    assert.ok(validateResource(renamed).ok);
    const zoneClass = validateResource(exampleZoneClass());
    assert.ok(zoneClass.ok);
    assert.ok(validateResource(renamed, zoneClass.resource).ok);
  });

  it('reports every problem at once', () => {
    const input = exampleRecordSet();
    const sp = input.spec as Record<string, unknown>;
    sp.ttl = 0;
    sp.type = 'BOGUS';
    sp.records = ['', 'x'];
    const result = validateResource(input);
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map(formatProblem), [
      'spec.type: "BOGUS" is not one of A, AAAA, CNAME, ALIAS, TXT, MX, SRV, CAA, NS, PTR, SOA, TLSA, SSHFP, HTTPS, SVCB, DS, NAPTR',
      'spec.ttl: 0 is below the minimum 1',
      'spec.records[0]: must not be empty',
    ]);
  });
});

describe('values that cannot be turned into text', () => {
  it('an apiVersion or kind that is a mapping with its own toString is a problem, not a thrown error', () => {
    const apiVersion = validateResource({
      apiVersion: { toString: 1 },
      kind: 'DNSZone',
      metadata: { name: 'a' },
    });
    assert.equal(apiVersion.ok, false);
    assert.ok(
      !apiVersion.ok &&
        apiVersion.problems.some((p) => p.path === 'apiVersion' && /got a mapping/.test(p.message)),
    );
    const kind = validateResource({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: [{ valueOf: 1 }],
      metadata: { name: 'a' },
    });
    assert.ok(
      !kind.ok && kind.problems.some((p) => p.path === 'kind' && /a list is not one of/.test(p.message)),
    );
  });
});

describe('a document with very many problems', () => {
  it('lists the first hundred and counts the rest in one more', () => {
    const spec: Record<string, unknown> = { name: 'www', type: 'A', records: ['192.0.2.1'] };
    for (let i = 0; i < 20_000; i++) spec[`unknown${i}`] = i;
    const result = validateResource({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'a', namespace: 'dns' },
      spec,
    });
    assert.ok(!result.ok);
    assert.equal(result.problems.length, 101);
    assert.equal(result.problems[0]!.path, 'spec.unknown0');
    assert.deepEqual(result.problems[100], {
      path: '',
      code: 'TOO_MANY_PROBLEMS',
      message: '19900 more problems not listed; fix the ones above first',
    });
  });
});
