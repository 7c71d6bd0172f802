/**
 * Loaded into Zonekeeper's processes by `bench/scale.ts --heap` (`NODE_OPTIONS=--import ...`, which
 * `serve --workers` passes on to its DNS worker processes): on SIGUSR2 the process collects garbage
 * and writes its heap figures to `$ZONEKEEPER_BENCH_HEAP_DIR/heap-<pid>.json`, and with
 * `$ZONEKEEPER_BENCH_SNAPSHOT_DIR` set also a V8 heap snapshot there (`bench/heap-summary.ts` sums it
 * by constructor). Bench only: nothing in the product loads it.
 */

import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

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
  process.on('SIGUSR2', () => {
    gc();
    gc();
    const snapshots = process.env.ZONEKEEPER_BENCH_SNAPSHOT_DIR;
    if (snapshots)
      v8.writeHeapSnapshot(
        path.join(snapshots, `${cluster.isPrimary ? 'primary' : 'dns-worker'}-${process.pid}.heapsnapshot`),
      );
    const usage = process.memoryUsage();
    const heap = v8.getHeapStatistics();
    const spaces = Object.fromEntries(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]),
    );
    writeFileSync(
      path.join(dir, `heap-${process.pid}.json`),
      JSON.stringify({
        pid: process.pid,
        role: cluster.isPrimary ? 'primary' : 'dns-worker',
        rss: usage.rss,
        heapUsed: usage.heapUsed,
        heapTotal: usage.heapTotal,
        external: usage.external,
        arrayBuffers: usage.arrayBuffers,
        heapSizeLimit: heap.heap_size_limit,
        spaces,
        eventLoopDelayMaxMs: Math.round(Math.max(longest, delay.max / 1e6)),
        eventLoopStallSeconds: stalls,
      }),
    );
  });
}
