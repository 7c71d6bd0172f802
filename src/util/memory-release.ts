/**
 * Gives back to the system the heap a first load left behind. The load's garbage is spread over the
 * old generation's pages, among what lives on; V8 keeps those pages committed after its ordinary
 * collections, and its memory reducer (which runs on an idle heap) moves at most about 12 MiB of live
 * objects per collection to empty pages, so most of them stay. After the first full programming the
 * control plane's live data is what it will be for a long time, so compacting it once then is worth
 * the pause (docs/benchmarks.md, "Sixth round: memory given back after the first load").
 *
 * What runs by default: one ordinary full collection with V8's `--compact-on-every-full-gc` set for
 * it alone, which moves every live object of the old generation onto as few pages as it fills; the
 * pages it empties and the young generation go back to the system when V8's memory reducer next runs
 * (seconds later on an idle heap). Moving holds a copy of what it moves until the collection is done:
 * resident memory rises by up to the old generation's live size during that collection.
 *
 * Node has no public API for collecting garbage or for V8's memory-pressure notification. V8's gc
 * extension has both: `gc()` is a full collection, `gc({type: 'major', execution: 'sync', flavor:
 * 'last-resort'})` is `Isolate::LowMemoryNotification` (memory-reducing full collections that shrink
 * the young generation and give back the pages V8 keeps in reserve; `reduceFirst`, `reduceAfter`). The
 * extension is installed only in contexts made while the `--expose-gc` flag is set, so the flag is set
 * just long enough to make one context and take its `gc`, then cleared again: no global of the
 * process (nor of a thread started later) gets a `gc`. V8's flags are the process's: a full
 * collection another thread makes while `--compact-on-every-full-gc` is set (a DNS thread's heap is
 * tens of MiB) compacts that heap too, which costs it milliseconds and changes nothing else.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { isMainThread } from 'node:worker_threads';

interface GcOptions {
  type: 'major';
  execution: 'sync';
  flavor: 'regular' | 'last-resort';
}
type GcFunction = (options?: GcOptions) => unknown;

/** Heap and resident memory before and after, in bytes. */
export interface MemoryReleaseResult {
  /** Memory-reducing collections made (`reduceFirst`, `reduceAfter`, or without the compacting one). */
  rounds: number;
  /** Whether one collection moved every live object of the old generation (`compactAll`). */
  compacted: boolean;
  /** Wall time of the collections together (the thread is paused while each runs). */
  ms: number;
  /** CPU time of the process (every thread: V8's helper threads mark and move in parallel) meanwhile. */
  cpuMs: number;
  heapCommittedBefore: number;
  heapCommittedAfter: number;
  heapUsedAfter: number;
  rssBefore: number;
  rssAfter: number;
  /** The process's peak resident memory so far, before and after (`process.resourceUsage().maxRSS`). */
  peakRssBefore: number;
  peakRssAfter: number;
}

export interface MemoryReleaseOptions {
  /** At most this many collections (default 6). */
  maxRounds?: number;
  /** Stop once a collection gave back less committed heap than this (default 16 MiB). */
  minGainBytes?: number;
  /** Called between collections so that other work runs (default: one turn of the event loop). */
  between?: () => Promise<void>;
  /** The collector (tests); default V8's gc extension, or nothing when it cannot be had. */
  gc?: GcFunction;
  /**
   * One ordinary full collection that moves every live object of the old generation off its pages
   * (V8's `--compact-on-every-full-gc`, set for that collection only; default true). The pages it
   * empties and the young generation go back to the system when V8's memory reducer next runs,
   * seconds later on an idle heap, or at once with `reduceAfter`.
   */
  compactAll?: boolean;
  /** A memory-reducing collection before the compacting one (default false). */
  reduceFirst?: boolean;
  /**
   * Memory-reducing collections after the compacting one, until one gives back less than
   * `minGainBytes` (default false; without the compacting one they are what runs).
   */
  reduceAfter?: boolean;
}

let extension: GcFunction | null | undefined;

/** V8's gc function, without leaving `--expose-gc` set; undefined when V8 does not give it. */
export function v8GcFunction(): GcFunction | undefined {
  if (extension !== undefined) return extension ?? undefined;
  extension = null;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') {
    // The process was started with --expose-gc: its own global has it.
    extension = own as GcFunction;
    return extension;
  }
  try {
    v8.setFlagsFromString('--expose-gc');
    try {
      const gc = vm.runInNewContext('typeof gc === "function" ? gc : undefined') as unknown;
      if (typeof gc === 'function') extension = gc as GcFunction;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  } catch {
    extension = null;
  }
  return extension ?? undefined;
}

function setFlag(flag: string): boolean {
  try {
    v8.setFlagsFromString(flag);
    return true;
  } catch {
    return false;
  }
}

/**
 * Compacts this thread's old generation in one full collection (and memory-reducing collections as
 * the options say, a turn of the event loop between any two). Only on the main thread: never on a
 * thread that answers DNS. Undefined when not run (not the main thread, or no gc function to be had).
 */
export async function releaseMemory(
  options: MemoryReleaseOptions = {},
): Promise<MemoryReleaseResult | undefined> {
  if (!isMainThread) return undefined;
  const gc = options.gc ?? v8GcFunction();
  if (!gc) return undefined;
  const maxRounds = options.maxRounds ?? 6;
  const minGain = options.minGainBytes ?? 16 * 2 ** 20;
  const between = options.between ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  const heapCommittedBefore = v8.getHeapStatistics().total_heap_size;
  const rssBefore = process.memoryUsage.rss();
  const peakRssBefore = process.resourceUsage().maxRSS * 1024;
  const cpuBefore = process.cpuUsage();
  let committed = heapCommittedBefore;
  let rounds = 0;
  let ms = 0;
  let compacted = false;
  const timed = (flavor: 'regular' | 'last-resort') => {
    const start = performance.now();
    gc({ type: 'major', execution: 'sync', flavor });
    ms += performance.now() - start;
  };
  // Gives back committed heap; true when it gave back at least minGain.
  const reduce = (): boolean => {
    timed('last-resort');
    rounds++;
    const now = v8.getHeapStatistics().total_heap_size;
    const gain = committed - now;
    committed = now;
    return gain >= minGain;
  };
  let more = false;
  if (options.reduceFirst === true) more = reduce();
  if (options.compactAll !== false && rounds < maxRounds && setFlag('--compact-on-every-full-gc')) {
    if (rounds > 0) await between();
    try {
      timed('regular');
      compacted = true;
    } finally {
      setFlag('--no-compact-on-every-full-gc');
    }
    more = options.reduceAfter === true;
  } else if (rounds === 0) {
    // No compaction to be had: memory-reducing collections alone, each moving what V8's quota allows.
    more = true;
  }
  while (more && rounds < maxRounds) {
    if (rounds > 0 || compacted) await between();
    more = reduce();
  }
  const heap = v8.getHeapStatistics();
  const cpu = process.cpuUsage(cpuBefore);
  return {
    rounds,
    compacted,
    ms: Math.round(ms),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    heapCommittedBefore,
    heapCommittedAfter: heap.total_heap_size,
    heapUsedAfter: heap.used_heap_size,
    rssBefore,
    rssAfter: process.memoryUsage.rss(),
    peakRssBefore,
    peakRssAfter: process.resourceUsage().maxRSS * 1024,
  };
}

/**
 * `release()` runs `releaseMemory` the first time it is called and never again (later calls get the
 * first call's promise): the product gives memory back once, after its first full programming.
 */
export class MemoryReleaseOnce {
  private done: Promise<MemoryReleaseResult | undefined> | undefined;
  private readonly options: MemoryReleaseOptions;

  constructor(options: MemoryReleaseOptions = {}) {
    this.options = options;
  }

  get started(): boolean {
    return this.done !== undefined;
  }

  release(): Promise<MemoryReleaseResult | undefined> {
    this.done ??= releaseMemory(this.options);
    return this.done;
  }
}
