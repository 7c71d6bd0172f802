/**
 * Run as a child process by test/api-writes.e2e.test.ts: `zonekeeper serve` in this process with the
 * given manifests and state dir, writing requests of 10 record sets each through the record writer
 * until killed; prints "acked <k>" once request k resolved (durable).
 */
import { startServe } from '../../src/cli/serve.ts';

const [manifests, stateDir] = process.argv.slice(2) as [string, string];
const serve = await startServe({
  manifests,
  stateDir,
  dns: '127.0.0.1:0',
  http: '127.0.0.1:0',
  secondaryProbeTimeoutMs: 0,
  writeAccess: {
    credentials: [{ name: 'key-a', kind: 'api-key', namespace: 'team-a', secretRef: { env: 'KEY_A' } }],
    defaultQuota: { maxRecordSets: 1_000_000, requestsPerSecond: 1_000_000, burst: 1_000_000 },
  },
  log: () => {},
});
for (let k = 1; ; k++) {
  await serve.writer.apply('key-a', {
    changes: Array.from({ length: 10 }, (_, i) => ({
      op: 'upsert' as const,
      name: `r${k}-${i}.a.example.com.`,
      type: 'TXT' as const,
      records: [`"request ${k} change ${i} ${'x'.repeat(200)}"`],
    })),
  });
  process.stdout.write(`acked ${k}\n`);
}
