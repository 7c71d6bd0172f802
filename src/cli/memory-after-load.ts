import v8 from 'node:v8';
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
/** How `giveMemoryBackAfterFirstLoad` decides; each has a default for the product. */
export interface AfterLoadOptions {
  /** The environment read for `ZONEKEEPER_COMPACT_AFTER_LOAD` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** What compacting may add, and what the process may still take (default `roomToCompact`). */
  room?: () => { needed: number; available: number };
  /**
   * Skip it when the old generation holds more than this: the pause grows with it (about 5 s per GiB
   * on an idle machine, three times that on a loaded one), and a caller whose thread must not stop that
   * long says so (the operator's leader renews its lease every few seconds).
   */
  maxLiveBytes?: number;
}

export function giveMemoryBackAfterFirstLoad(
  after: Promise<unknown>,
  log: Log,
  options: AfterLoadOptions = {},
): Promise<void> {
  const { env = process.env, room = roomToCompact, maxLiveBytes = Number.POSITIVE_INFINITY } = options;
  // The collection holds a copy of what it moves: resident memory can rise above the load's peak by
  // up to the old generation's live size. Where a memory limit is sized to that peak, it is turned off.
  if (env[COMPACTION_ENV]?.trim().toLowerCase() === 'off') return Promise.resolve();
  // The compacting collection, then one memory-reducing one (V8's low-memory notification): the pages
  // the compaction emptied go back to the system at once. Left to V8's memory reducer, they were given
  // back only when it happened to run a collection later; after a first start that writes its state
  // log's first snapshot once every zone is programmed (ADR 0015) it did not within a minute, and a
  // million record sets stayed at about 3 GiB resident instead of 1.5 (docs/benchmarks.md, "Tenth
  // round: memory given back after the first load"). Not where the pause is bounded (`maxLiveBytes`: an
  // operator holding a leader lease, whose budget counts one collection): there the compacting one alone.
  const release = new MemoryReleaseOnce(
    Number.isFinite(maxLiveBytes) ? {} : { reduceAfter: true, maxRounds: 1 },
  );
  return after
    .then(() => new Promise((resolve) => setTimeout(resolve, RELEASE_DELAY_MS).unref()))
    .then(() => {
      // Never where the copy could pass the memory the process may still take (a container's limit,
      // or the machine's free memory): an out-of-memory kill there would repeat at every start.
      const { needed, available } = room();
      if (needed > maxLiveBytes) {
        log('info', 'not giving memory back after the first load: the pause would be too long here', {
          liveMiB: Math.round(needed / MIB),
          maxLiveMiB: Math.round(maxLiveBytes / MIB),
        });
        return undefined;
      }
      if (needed <= available * ROOM_SHARE) return release.release();
      log('warn', "not giving memory back after the first load: no room for the compaction's copy", {
        neededMiB: Math.round(needed / MIB),
        availableMiB: Math.round(available / MIB),
      });
      return undefined;
    })
    .then(
      (r) => {
        if (r) log('info', 'gave memory back after the first load', memoryReleaseFields(r));
      },
      (e: unknown) => log('warn', `could not give memory back: ${(e as Error).message}`),
    );
}

/** At most this share of the memory still available may be needed for the compaction's copy. */
const ROOM_SHARE = 0.8;

/**
 * What compacting may add to resident memory (the old generation's live size: every live object may
 * be moved), and what the process may still take (`process.availableMemory()`: a container's memory
 * limit less what it uses, or the machine's free memory).
 */
function roomToCompact(): { needed: number; available: number } {
  const old = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'old_space');
  return { needed: old?.space_used_size ?? 0, available: process.availableMemory() };
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
