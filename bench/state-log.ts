/**
 * The folder state log's writes on a first start, alone (ADR 0015): `--records` record sets put into
 * an empty state as the manifest source puts them (one creation time per load, a file per
 * `--per-file` objects), then made durable the ways a start makes them, each measured as main-thread
 * CPU (`process.threadCpuUsage`, the puts themselves left out) and wall time, `--runs` times each (medians):
 * - `serve`: as `serve` starts: compactions held, every object put (its CPU shown apart), then the first
 *   zone's serial set (what the first answer waits for), then the hold released (after every zone was
 *   programmed) and the writes it starts; with `--expose-gc`, the heap after the puts and what the
 *   snapshot takes as it starts too;
 * - `snapshot`: every object pending at the first flush (written as the snapshot itself);
 * - `appended+compacted`: flushed in batches of `--batch` objects (appended to the log), then the
 *   snapshot the log's size calls for.
 *
 *   node [--expose-gc] bench/state-log.ts [--records 300000] [--per-file 1000] [--batch 20000] [--runs 3] [--modes serve,snapshot,appended+compacted]
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DNSRecordSet } from '../src/api/index.ts';
import { StateStore } from '../src/sources/manifests/state-file.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '300000' },
    'per-file': { type: 'string', default: '1000' },
    batch: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'serve,snapshot,appended+compacted' },
  },
});
const records = Number(values.records);
const perFile = Number(values['per-file']);
const batch = Number(values.batch);
const runs = Number(values.runs);

const created = new Date('2026-11-27T00:00:00Z').toISOString();
const objects = Array.from({ length: records }, (_, i) => {
  const zone = `zone-${Math.floor(i / 100)}`;
  const name = `${zone}-r${i}`;
  const resource: DNSRecordSet = {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name, namespace: `team-${Math.floor(i / 10000)}` },
    spec: {
      zoneRef: { name: zone },
      name: `host-${i}`,
      type: 'A',
      records: [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`],
    },
  };
  return {
    id: `DNSRecordSet/${resource.metadata.namespace}/${name}`,
    object: { created, file: `${zone}-${Math.floor(i / perFile)}.yaml`, resource },
  };
});

const cpuMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};

type Mode = 'serve' | 'snapshot' | 'appended+compacted';
interface Result {
  cpuMs: number;
  wallMs: number;
  bytes: number;
  putsMs?: number;
  firstCpuMs?: number;
  firstWallMs?: number;
  heapMiB?: number;
  snapshotStartMiB?: number;
}
const gc = (globalThis as { gc?: () => void }).gc;

async function once(mode: Mode): Promise<Result> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-state-bench-'));
  try {
    const state = await StateStore.open(dir);
    let cpu0 = cpuMs();
    let t0 = performance.now();
    const extra: Partial<Result> = {};
    if (mode === 'serve') {
      const release = state.holdCompaction();
      const p0 = cpuMs();
      for (const { id, object } of objects) state.putObject(id, object);
      extra.putsMs = cpuMs() - p0;
      if (gc) {
        gc();
        extra.heapMiB = process.memoryUsage().heapUsed / 2 ** 20;
      }
      cpu0 = cpuMs();
      t0 = performance.now();
      // The first zone's serial: it is served once this resolves.
      await state.set('zone-0.example.', { serial: 1, hash: 'h' });
      extra.firstCpuMs = cpuMs() - cpu0;
      extra.firstWallMs = performance.now() - t0;
      // What the snapshot takes as it starts (it runs to its first write before `release` returns).
      gc?.();
      const heap0 = process.memoryUsage().heapUsed;
      release();
      if (gc) extra.snapshotStartMiB = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;
    } else if (mode === 'snapshot') {
      for (const { id, object } of objects) state.putObject(id, object);
      // The puts are not measured: only what makes them durable.
      cpu0 = cpuMs();
      await state.flush();
    } else {
      const release = state.holdCompaction();
      for (let i = 0; i < objects.length; i += batch) {
        const before = cpuMs();
        for (const { id, object } of objects.slice(i, i + batch)) state.putObject(id, object);
        cpu0 += cpuMs() - before;
        await state.flush();
      }
      release();
    }
    await state.compactionsSettled();
    const cpu = cpuMs() - cpu0;
    const wall = performance.now() - t0;
    await state.close();
    let bytes = 0;
    for (const name of await readdir(dir)) bytes += (await stat(path.join(dir, name))).size;
    // Read back: every object is there.
    const again = await StateStore.open(dir, { readOnly: true });
    let found = 0;
    for (const _ of again.objectIds()) found++;
    if (found !== records) throw new Error(`read back ${found} objects, wrote ${records}`);
    return { cpuMs: cpu, wallMs: wall, bytes, ...extra };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const shown = (results: Result[], pick: (r: Result) => number | undefined) => {
  const xs = results.map(pick).filter((x): x is number => x !== undefined);
  return `${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})`;
};
for (const mode of values.modes.split(',') as Mode[]) {
  const results: Result[] = [];
  for (let r = 0; r < runs; r++) results.push(await once(mode));
  process.stdout.write(
    `${mode}: main-thread CPU ${shown(results, (r) => r.cpuMs)} ms, wall ${median(results.map((r) => r.wallMs)).toFixed(0)} ms, folder ${(results[0]!.bytes / 2 ** 20).toFixed(1)} MiB` +
      (mode === 'serve'
        ? `; puts ${shown(results, (r) => r.putsMs)} ms; first serial: CPU ${shown(results, (r) => r.firstCpuMs)} ms, wall ${shown(results, (r) => r.firstWallMs)} ms` +
          (gc
            ? `; heap after the puts ${shown(results, (r) => r.heapMiB)} MiB, taken as the snapshot starts ${shown(results, (r) => r.snapshotStartMiB)} MiB`
            : '')
        : '') +
      '\n',
  );
}
