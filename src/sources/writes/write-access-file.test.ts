import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadWriteAccess } from './write-access-file.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-write-access-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = async (name: string, text: string) => {
  const p = path.join(dir, name);
  await writeFile(p, text);
  return p;
};

test('the write-access file: credentials by reference and quotas', async () => {
  const config = await loadWriteAccess(
    await file(
      'ok.yaml',
      [
        'credentials:',
        '  - { name: key-a, kind: api-key, namespace: team-a, secretRef: { env: KEY_A } }',
        '  - { name: hook, kind: webhook-hmac, namespace: team-b, secretRef: { file: /run/secrets/hook } }',
        'quotas:',
        '  team-a: { maxRecordSets: 50, requestsPerSecond: 2 }',
        'defaultQuota: { burst: 5 }',
      ].join('\n'),
    ),
  );
  assert.deepEqual(
    config.credentials.map((c) => `${c.name} ${c.kind} ${c.namespace}`),
    ['key-a api-key team-a', 'hook webhook-hmac team-b'],
  );
  assert.deepEqual(config.quotas, { 'team-a': { maxRecordSets: 50, requestsPerSecond: 2 } });
  assert.deepEqual(config.defaultQuota, { burst: 5 });
});

test('a secret written inline, a bad file or a missing one stops the start, saying where', async () => {
  await assert.rejects(
    loadWriteAccess(
      await file(
        'inline.yaml',
        'credentials:\n  - { name: k, kind: api-key, namespace: a, secret: hunter2, secretRef: { env: K } }\n',
      ),
    ),
    /credentials\[0\]\.secret: a credential never holds its secret inline.*\(INLINE_SECRET\)/,
  );
  await assert.rejects(loadWriteAccess(await file('bad.yaml', 'credentials: [')), /not YAML or JSON/);
  await assert.rejects(loadWriteAccess(path.join(dir, 'missing.yaml')), /cannot be read \(ENOENT\)/);
  await assert.rejects(
    loadWriteAccess(await file('quota.yaml', 'credentials: []\nquotas: { a: { maxRecordSets: -1 } }\n')),
    /quotas\.a\.maxRecordSets/,
  );
});
