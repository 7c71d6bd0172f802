/**
 * The main thread's CPU for a folder's first load as `serve` wires it: a record-table-backed
 * `MemoryStore`, an in-memory `StateStore` (its compactions held, as at a first start), the folder's
 * change safety (`FolderHold`), the source metrics and a parse pool of two threads; a folder written
 * as `bench/scale.ts` writes it (files of `--per-file` documents). Each round loads the folder into
 * empty ones (`ManifestSource.start`) and reports the calling thread's CPU time
 * (`process.threadCpuUsage`: receiving the documents, what each file defines, applying them), the
 * part of it after the last file was received (the main thread alone, not paced by the parse
 * threads), and
 * the heap after a full collection once loaded (with `--expose-gc`), and the load's wall time. With `--baseline DIR` (another
 * checkout, its node_modules linked) rounds of the two versions alternate in this one process; the
 * first round of each is a warm-up, reported and not counted.
 *
 *   node --expose-gc bench/folder-load-cpu.ts [--records 100000] [--zones 1000] [--rounds 7] [--baseline DIR]
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import path from 'node:path';
import { abArgs, median, moduleLoader, sides } from './lib/ab.ts';
import { folderWiring } from './lib/folder.ts';
import { makeTempDir, removeTempDir } from './lib/proc.ts';
import { writeScaleFolder } from './lib/zone.ts';

const { records, zones, rounds, baseline } = abArgs(7);
const PER_FILE = 1000;
const tmp = makeTempDir('zonekeeper-bench-folder-load-');
const dir = path.join(tmp, 'manifests');
const files = writeScaleFolder(dir, records, zones, PER_FILE);
const gc = (globalThis as { gc?: () => void }).gc;

/**
 * With `ZONEKEEPER_BENCH_PERF_CTL` and `_ACK` (the FIFOs of `perf stat -D -1 --control
 * fifo:CTL,ACK`), perf counts only while a folder loads: instruction counts per thread of the load
 * alone (`perf stat --per-thread -e instructions:u`), firmer than CPU time on a shared machine.
 */
const perfCtl = process.env.ZONEKEEPER_BENCH_PERF_CTL;
const perfAck = process.env.ZONEKEEPER_BENCH_PERF_ACK;
function perf(command: 'enable' | 'disable'): void {
  if (perfCtl === undefined || perfAck === undefined) return;
  const ctl = openSync(perfCtl, 'w');
  writeSync(ctl, `${command}\n`);
  closeSync(ctl);
  const ack = openSync(perfAck, 'r');
  readSync(ack, Buffer.alloc(5));
  closeSync(ack);
}

async function version(root: string) {
  const load = moduleLoader(root);
  const [wire, metrics, registry] = await Promise.all([
    folderWiring(root),
    load('src/sources/manifests/resource-metrics.ts'),
    load('src/metrics/registry.ts'),
  ]);
  return async (): Promise<{
    cpuMs: number;
    phaseMs: number;
    wallMs: number;
    heapMiB: number;
    buffersMiB: number;
    objects: number;
  }> => {
    const { recordTable, store, release, pool, folder } = await wire(dir, { holdCompaction: true });
    metrics.registerSourceMetrics(new registry.Registry(), store, folder, recordTable);
    // The phase after the last file is received (what each file defines, applying the objects),
    // where the main thread works alone: from when the reads resolve (`readChanged`, a private
    // method wrapped here) to the end of the load.
    let afterReads: NodeJS.CpuUsage | undefined;
    const reading = folder as unknown as { readChanged: (...args: unknown[]) => Promise<unknown> };
    const readChanged = reading.readChanged.bind(folder);
    reading.readChanged = async (...args) => {
      const reads = await readChanged(...args);
      afterReads = process.threadCpuUsage();
      return reads;
    };
    perf('enable');
    const before = process.threadCpuUsage();
    const started = performance.now();
    await folder.start();
    const wallMs = performance.now() - started;
    const end = process.threadCpuUsage();
    perf('disable');
    const used = process.threadCpuUsage(before);
    const last = afterReads ?? before;
    const phaseMs = (end.user + end.system - last.user - last.system) / 1000;
    folder.stop();
    gc?.();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    const heapMiB = heapUsed / 2 ** 20;
    // Typed arrays' contents (the record table's index and columns among them) are outside the heap.
    const buffersMiB = arrayBuffers / 2 ** 20;
    const objects = store.count('DNSRecordSet');
    release();
    await pool.close();
    return { cpuMs: (used.user + used.system) / 1000, phaseMs, wallMs, heapMiB, buffersMiB, objects };
  };
}

try {
  const versions = await sides(version, baseline);
  const cpu = new Map<string, number[]>();
  const phase = new Map<string, number[]>();
  const heap = new Map<string, number[]>();
  const wall = new Map<string, number[]>();
  const buffers = new Map<string, number[]>();
  process.stdout.write(
    `${records} record sets in ${zones} zones, ${files} files, ${rounds} alternating rounds\n`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
      const { cpuMs, phaseMs, wallMs, heapMiB, buffersMiB, objects } = await run();
      if (round > 0) {
        (cpu.get(label) ?? cpu.set(label, []).get(label)!).push(cpuMs);
        (phase.get(label) ?? phase.set(label, []).get(label)!).push(phaseMs);
        (heap.get(label) ?? heap.set(label, []).get(label)!).push(heapMiB);
        (wall.get(label) ?? wall.set(label, []).get(label)!).push(wallMs);
        (buffers.get(label) ?? buffers.set(label, []).get(label)!).push(buffersMiB);
      }
      process.stdout.write(
        `  round ${round + 1} ${label.padEnd(8)} wall ${wallMs.toFixed(0)} ms, main thread ${cpuMs.toFixed(0)} ms (after the reads ${phaseMs.toFixed(0)} ms), heap after GC ${heapMiB.toFixed(1)} MiB (array buffers ${buffersMiB.toFixed(1)} MiB), ${objects} record sets\n`,
      );
      gc?.();
    }
  }
  const spread = (list: number[]) =>
    `${median(list).toFixed(0)} ms (${Math.min(...list).toFixed(0)}–${Math.max(...list).toFixed(0)})`;
  for (const [label, list] of [...cpu].sort(([a], [b]) => a.localeCompare(b)))
    process.stdout.write(
      `${label.padEnd(8)} wall median ${spread(wall.get(label)!)}, main thread CPU median ${spread(list)}, after the reads ${spread(phase.get(label)!)}, heap after GC median ${median(heap.get(label)!).toFixed(1)} MiB, array buffers median ${median(buffers.get(label)!).toFixed(1)} MiB\n`,
    );
} finally {
  removeTempDir(tmp);
}
