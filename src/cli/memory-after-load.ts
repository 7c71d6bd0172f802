import { MemoryReleaseOnce, type MemoryReleaseResult } from '../util/memory-release.ts';
import type { Log } from './logger.ts';

const MIB = 2 ** 20;
/** `off` turns the compaction after the first load off (docs/benchmarks.md "Sixth round"). */
export const COMPACTION_ENV = 'ZONEKEEPER_COMPACT_AFTER_LOAD';
/** How long after the first full programming (and what `after` waits for) memory is given back. */
const RELEASE_DELAY_MS = 1000;

/**
 * Once every zone was programmed once, the heap the first load left behind goes back to the system:
 * one compacting collection of this (the main) thread's heap, once `after` resolves and a second
 * later (what waits for this thread, an HTTP probe or a status write, goes first), logged with its
 * figures (README, docs/benchmarks.md "Sixth round"). Only for processes whose DNS is answered by DNS
 * threads: the caller calls it only then, since this thread is paused while it runs.
 */
export function giveMemoryBackAfterFirstLoad(
  after: Promise<unknown>,
  log: Log,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  // The collection holds a copy of what it moves: resident memory can rise above the load's peak by
  // up to the old generation's live size. Where a memory limit is sized to that peak, it is turned off.
  if (env[COMPACTION_ENV]?.trim().toLowerCase() === 'off') return Promise.resolve();
  const release = new MemoryReleaseOnce();
  return after
    .then(() => new Promise((resolve) => setTimeout(resolve, RELEASE_DELAY_MS).unref()))
    .then(() => release.release())
    .then(
      (r) => {
        if (r) log('info', 'gave memory back after the first load', memoryReleaseFields(r));
      },
      (e: unknown) => log('warn', `could not give memory back: ${(e as Error).message}`),
    );
}

/** A memory release's figures for the log, in MiB. */
function memoryReleaseFields(r: MemoryReleaseResult): Record<string, number | boolean> {
  return {
    compacted: r.compacted,
    reducing: r.rounds,
    ms: r.ms,
    cpuMs: r.cpuMs,
    heapCommittedMiB: Math.round(r.heapCommittedBefore / MIB),
    heapCommittedAfterMiB: Math.round(r.heapCommittedAfter / MIB),
    heapUsedAfterMiB: Math.round(r.heapUsedAfter / MIB),
    rssMiB: Math.round(r.rssBefore / MIB),
    rssAfterMiB: Math.round(r.rssAfter / MIB),
    peakRssMiB: Math.round(r.peakRssBefore / MIB),
    peakRssAfterMiB: Math.round(r.peakRssAfter / MIB),
  };
}
