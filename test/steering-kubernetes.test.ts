/**
 * The steering fields of DNSRecordSet on a real API server (kube-apiserver and etcd): every manifest
 * folder mode accepts is accepted, and every one it rejects is rejected by the CRD's schema and CEL
 * rules with the same meaning (server-side dry run, nothing stored).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { type KubeCluster, startKube } from './support/kube.ts';
import { invalidSteeringCases, validSteeringCases } from './support/steering-examples.ts';

describe('steering fields on a real API server', { timeout: 300_000 }, () => {
  let kube: KubeCluster;
  before(async () => {
    kube = await startKube({ crds: true });
    await kube.kubectlOk(['create', 'namespace', 'dns']);
  });
  after(async () => {
    await kube?.stop();
  });

  const apply = (object: object) =>
    kube.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: stringify(object) });

  test('accepts what folder mode accepts', async () => {
    for (const c of validSteeringCases()) {
      const r = await apply(c.object);
      assert.equal(r.code, 0, `${c.name}: ${r.stderr}`);
    }
  });

  test('rejects what folder mode rejects, at the same field', async () => {
    for (const c of invalidSteeringCases()) {
      const r = await apply(c.object);
      assert.notEqual(r.code, 0, `${c.name}: accepted`);
      for (const p of c.problems) assert.ok(r.stderr.includes(p.path), `${c.name}: ${r.stderr}`);
    }
  });
});
