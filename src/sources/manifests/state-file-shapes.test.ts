import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Resource } from '../../api/index.ts';
import { StateStore } from './state-file.ts';

const base = (extra: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) =>
  ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name: 'x', namespace: 'dns', ...meta },
    spec: { zoneRef: { name: 'z' }, name: 'x', type: 'A', records: ['192.0.2.1'] },
    ...extra,
  }) as unknown as Resource;

test('state store: unusual shapes round-trip through the log and a snapshot', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-rv-st-'));
  try {
    const cases: [string, Resource][] = [
      ['DNSRecordSet/dns/x', base()],
      ['DNSRecordSet/dns/lab', base({}, { name: 'lab', labels: { a: 'b' }, annotations: { c: 'd' } })],
      [
        'DNSRecordSet/dns/own',
        base({}, { name: 'own', ownerReferences: [{ kind: 'X', name: 'y', uid: 'u', apiVersion: 'v1' }] }),
      ],
      ['DNSRecordSet/dns/fin', base({}, { name: 'fin', finalizers: ['f'], uid: 'u1', resourceVersion: '7' })],
      ['DNSRecordSet/dns/st', base({ status: { observedGeneration: 1 } }, { name: 'st' })],
      ['DNSRecordSet/dns/extra', base({ extra: 1 }, { name: 'extra' })],
      ['DNSRecordSet/nons', base({}, { name: 'nons', namespace: undefined })],
      ['DNSRecordSet/dns/other', base({}, { name: 'notother' })],
      // Ids that begin or end as the object's would, but are not its.
      ['DNSRecordSet/dns/xx', base()],
      ['DNSRecordSet/dns/x/', base()],
      ['DNSRecordSet/dnsx', base()],
      ['DNSRecordSetx/dns/x', base()],
      ['DNSRecordSet/dn/s/x', base({}, { name: 's/x', namespace: 'dn' })],
      [
        'DNSZoneClass/c',
        {
          apiVersion: 'dns.zonekeeper.dev/v1alpha1',
          kind: 'DNSZoneClass',
          metadata: { name: 'c' },
          spec: { backend: { builtin: {} } },
        } as unknown as Resource,
      ],
      ['Foo/dns/x', { ...base(), kind: 'Foo' } as unknown as Resource],
      ['DNSRecordSet/dns/v', { ...base({}, { name: 'v' }), apiVersion: 'other/v1' } as unknown as Resource],
      ['DNSRecordSet/dns/arr', base({ spec: [1, 2] }, { name: 'arr' })],
    ];
    const s1 = await StateStore.open(dir);
    for (const [id, resource] of cases)
      s1.putObject(id, { created: 't', file: 'f.yaml', resource, generation: 3 });
    const expect = (r: Resource) => JSON.parse(JSON.stringify(r));
    for (const [id, resource] of cases)
      assert.deepEqual(expect(s1.object(id)!.resource!), expect(resource), id);
    await s1.close();
    for (const options of [{ readOnly: true }, { compactMinBytes: 1 }, { readOnly: true }]) {
      const s = await StateStore.open(dir, options);
      for (const [id, resource] of cases) {
        assert.deepEqual(
          expect(s.object(id)!.resource!),
          expect(resource),
          `${id} ${JSON.stringify(options)}`,
        );
        assert.equal(s.object(id)!.generation, 3);
      }
      if (!options.readOnly) await s.set('example.com.', { serial: 1 });
      await s.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
