/**
 * A parse thread's young generation at its full size from its first allocation (docs/benchmarks.md,
 * "Eighteenth round: the parse threads' young generation").
 *
 * A parse thread's isolate starts, as every V8 isolate, with semi-spaces of 1 MiB that double at a
 * scavenge whose survivors fill them, up to 64 MiB. It lives for a first load of a few seconds, so
 * most of its scavenges (14–15 of 16–17 at 300,000 record sets) come before its young generation
 * reaches 64 MiB, each copying the file in flight and those it keeps for `locate`. V8 reads
 * `--min-semi-space-size` when an isolate's heap is set up, and a worker thread's isolate is set up
 * in the thread after `new Worker` returns, so `v8.setFlagsFromString` before the parse thread is
 * made and V8's own value (0) again once it is online starts that isolate at 64 MiB semi-spaces: 3–4
 * scavenges instead of 16–17, about 0.1 CPU-second less for the parse threads at 300,000. V8 gives an
 * idle thread's young generation back whatever its start, so the thread left after the load holds
 * no more memory to speak of. The isolates that run already keep their sizes; one made meanwhile
 * gets the same start, bounded by its own `resourceLimits.maxYoungGenerationSizeMb` (the DNS
 * threads' cap of 8 MiB stays 8 MiB).
 *
 * `ZONEKEEPER_PARSE_SEMI_SPACE_MB` in the environment sets another size (MiB; `0` or `off`: V8's own
 * start); `--min-semi-space-size` on Node's command line or in `NODE_OPTIONS` wins over both.
 */
import v8 from 'node:v8';
import { type V8FlagSources, v8FlagValue } from './v8-flag-override.ts';

/** The environment variable naming the size (MiB; `0` or `off` turns it off). */
export const PARSE_SEMI_SPACE_ENV = 'ZONEKEEPER_PARSE_SEMI_SPACE_MB';
/** A parse thread's semi-spaces at its start, in MiB: V8's largest for a worker's default limits. */
export const DEFAULT_PARSE_SEMI_SPACE_MB = 64;
const FLAG = '--min-semi-space-size';

export interface ParseSemiSpaceOptions extends V8FlagSources {
  /** How a V8 flag is set (default `v8.setFlagsFromString`). */
  setFlags?: (flags: string) => void;
}

/** The size to start parse threads with, or why there is none. */
export type ParseSemiSpace =
  | { readonly mb: number; readonly skipped?: undefined }
  | { readonly mb: undefined; readonly skipped: 'off' | 'node-flag' | 'invalid' };

/** The semi-space size for parse threads: Node's flags, else the environment, else the default. */
export function parseSemiSpace(options: ParseSemiSpaceOptions = {}): ParseSemiSpace {
  const asked = v8FlagValue(FLAG, PARSE_SEMI_SPACE_ENV, DEFAULT_PARSE_SEMI_SPACE_MB, options);
  return asked.value === undefined ? { mb: undefined, skipped: asked.skipped } : { mb: asked.value };
}

/** The events of a `Worker` this module waits for. */
interface Starting {
  once(event: 'online' | 'error' | 'exit', listener: () => void): unknown;
}

/** Parse threads made and not yet online: the flag stays set while there are any. */
let starting = 0;

/**
 * Makes a parse thread (`create`, which calls `new Worker`) with the semi-space size of
 * `parseSemiSpace()` set for its isolate's setup, and V8's own (0) again once every thread made so
 * is online, or failed or exited before.
 */
export function withParseSemiSpace<W extends Starting>(
  create: () => W,
  options: ParseSemiSpaceOptions = {},
): W {
  const { mb } = parseSemiSpace(options);
  if (mb === undefined) return create();
  const setFlags = options.setFlags ?? ((flags: string) => v8.setFlagsFromString(flags));
  setFlags(`${FLAG}=${mb}`);
  starting++;
  let done = false;
  const started = () => {
    if (done) return;
    done = true;
    if (--starting === 0) setFlags(`${FLAG}=0`);
  };
  let worker: W;
  try {
    worker = create();
  } catch (error) {
    started();
    throw error;
  }
  worker.once('online', started);
  worker.once('error', started);
  worker.once('exit', started);
  return worker;
}
