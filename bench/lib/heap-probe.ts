/**
 * Loaded into Zonekeeper's process by `bench/scale.ts --heap` (`NODE_OPTIONS=--import ...`, which
 * runs in the main thread and in every DNS thread of `serve --workers`): on SIGUSR2 the main thread
 * asks every thread (a BroadcastChannel; signals reach the main thread only) to collect garbage and
 * write its heap figures to `$ZONEKEEPER_BENCH_HEAP_DIR/heap-<pid>[-t<threadId>].json`, and does the
 * same; with `$ZONEKEEPER_BENCH_SNAPSHOT_DIR` set each also writes a V8 heap snapshot there
 * (`bench/heap-summary.ts` sums it by constructor). Bench only: nothing in the product loads it.
 * Heap figures are per thread (each has its own V8 heap); resident memory is the process's.
 */

import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { BroadcastChannel, isMainThread, threadId, workerData } from 'node:worker_threads';

const dir = process.env.ZONEKEEPER_BENCH_HEAP_DIR;
if (dir) {
  // How long the event loop was held (a watch is read only between tasks): the longest delay, and
  // how many seconds saw one of at least 1 s.
  const delay = monitorEventLoopDelay({ resolution: 20 });
  delay.enable();
  let longest = 0;
  let stalls = 0;
  setInterval(() => {
    const max = delay.max / 1e6;
    longest = Math.max(longest, max);
    if (max >= 1000) stalls++;
    delay.reset();
  }, 1000).unref();
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  // A DNS thread has its listen address as workerData; other threads parse manifests or sign.
  const dnsThread = typeof (workerData as { listen?: unknown } | undefined)?.listen === 'string';
  const role = isMainThread
    ? cluster.isPrimary
      ? 'primary'
      : 'dns-worker'
    : dnsThread
      ? 'dns-thread'
      : 'thread';
  const suffix = isMainThread ? '' : `-t${threadId}`;
  const report = () => {
    gc();
    gc();
    const snapshots = process.env.ZONEKEEPER_BENCH_SNAPSHOT_DIR;
    if (snapshots) v8.writeHeapSnapshot(path.join(snapshots, `${role}-${process.pid}${suffix}.heapsnapshot`));
    const usage = process.memoryUsage();
    const heap = v8.getHeapStatistics();
    const stats = v8.getHeapSpaceStatistics();
    const spaces = Object.fromEntries(stats.map((s) => [s.space_name, s.space_used_size]));
    // What each space holds from the system (used, garbage and free pages kept).
    const spaceSizes = Object.fromEntries(stats.map((s) => [s.space_name, s.space_size]));
    writeFileSync(
      path.join(dir, `heap-${process.pid}${suffix}.json`),
      JSON.stringify({
        pid: process.pid,
        threadId,
        role,
        rss: usage.rss,
        heapUsed: heap.used_heap_size,
        heapTotal: heap.total_heap_size,
        external: usage.external,
        arrayBuffers: usage.arrayBuffers,
        heapSizeLimit: heap.heap_size_limit,
        spaces,
        spaceSizes,
        eventLoopDelayMaxMs: Math.round(Math.max(longest, delay.max / 1e6)),
        eventLoopStallSeconds: stalls,
      }),
    );
  };
  const channel = new BroadcastChannel('zonekeeper-bench-heap-probe');
  // Neither keeps a thread alive nor the process.
  channel.unref();
  if (isMainThread) {
    process.on('SIGUSR2', () => {
      channel.postMessage('report');
      report();
    });
  } else {
    channel.onmessage = () => report();
  }
}
