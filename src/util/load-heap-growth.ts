/**
 * Fewer full collections of the main thread's heap while a first load builds it (docs/benchmarks.md,
 * "Seventeenth round: full collections during the first load").
 *
 * A first load grows the control plane's old generation from a few MiB to what it keeps (about
 * 330 MiB at 300,000 record sets, 1.3 GiB at a million). V8 runs a full collection (mark-compact)
 * each time the old generation passes a limit it sets after the previous one, a few times what
 * survived it: at 300,000 record sets four during the load (at about 20, 47, 150 and 410 MiB), each
 * marking everything that lives, on V8's helper threads while both CPUs are busy with the load, and
 * little of what they mark is garbage (a quarter at most). V8's `--heap-growing-percent` replaces the
 * factor it computes by a fixed one (1 + percent / 100) at every new limit, and V8 reads it each time,
 * so it can be set once the program runs: set while the first load runs and cleared (0, V8's own
 * factor again) once every zone was programmed, the load makes one or two full collections instead
 * of four or five. The collection after the first load (`memory-after-load.ts`) compacts the old
 * generation anyway, so memory a minute after the load is the same; what the skipped collections
 * would have freed stays until then. V8 never lets a limit pass halfway between the heap's size and
 * its own heap limit; where the process may take less memory than that limit (a container's memory
 * limit below it), the setting is not applied.
 *
 * `ZONEKEEPER_LOAD_HEAP_GROWTH` in the environment sets another percent (`0` or `off`: V8's own
 * factor throughout); `--heap-growing-percent` on Node's command line wins over both (Node refuses it
 * in `NODE_OPTIONS`).
 */
import v8 from 'node:v8';
import { type V8FlagSources, v8FlagValue } from './v8-flag-override.ts';

/** The environment variable naming the percent (`0` or `off` turns it off). */
export const LOAD_HEAP_GROWTH_ENV = 'ZONEKEEPER_LOAD_HEAP_GROWTH';
/** The old generation's limit after a full collection during a first load: 21 times what survived. */
export const DEFAULT_LOAD_HEAP_GROWTH_PERCENT = 2000;
const FLAG = '--heap-growing-percent';

export interface LoadHeapGrowthOptions extends V8FlagSources {
  /** How a V8 flag is set (default `v8.setFlagsFromString`). */
  setFlags?: (flags: string) => void;
  /** V8's heap limit, and the memory the process may still take (defaults: V8's, `availableMemory()`). */
  heapLimit?: () => number;
  availableMemory?: () => number;
}

export interface LoadHeapGrowth {
  /** The percent set, or undefined when V8's own factor stays. */
  readonly percent: number | undefined;
  /** Why it was not set, when it was not. */
  readonly skipped?: 'off' | 'node-flag' | 'memory' | 'invalid';
  /** V8's own factor again (only once, only if it was set here). */
  restore(): void;
}

/** Sets V8's heap growing factor for a first load; `restore()` once every zone was programmed. */
export function growHeapDuringLoad(options: LoadHeapGrowthOptions = {}): LoadHeapGrowth {
  const {
    env = process.env,
    execArgv = process.execArgv,
    setFlags = (flags: string) => v8.setFlagsFromString(flags),
    heapLimit = () => v8.getHeapStatistics().heap_size_limit,
    availableMemory = () => process.availableMemory(),
  } = options;
  const unset = (skipped: LoadHeapGrowth['skipped']): LoadHeapGrowth => ({
    percent: undefined,
    skipped,
    restore: () => {},
  });
  const asked = v8FlagValue(FLAG, LOAD_HEAP_GROWTH_ENV, DEFAULT_LOAD_HEAP_GROWTH_PERCENT, { env, execArgv });
  if (asked.value === undefined) return unset(asked.skipped);
  const percent = asked.value;
  // V8 bounds every limit by halfway to its heap limit; where the process may take less than that
  // limit, the bound would not keep the heap inside the memory there is.
  if (availableMemory() < heapLimit()) return unset('memory');
  setFlags(`${FLAG}=${percent}`);
  let restored = false;
  return {
    percent,
    restore: () => {
      if (restored) return;
      restored = true;
      setFlags(`${FLAG}=0`);
    },
  };
}
