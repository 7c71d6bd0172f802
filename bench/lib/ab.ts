/**
 * What the in-process A/B benches share (`first-build-cpu.ts`, `lookups-cpu.ts`, `reconcile-cpu.ts`):
 * the size of the scale objects and the rounds from the command line, and the same steps run from
 * this checkout and, with `--baseline DIR` (another checkout, e.g. `git archive REV | tar -x -C DIR`,
 * its node_modules linked), from another one, in alternating rounds of one process.
 *
 *   [--records 100000] [--zones 1000] [--rounds N] [--baseline DIR]
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface AbArgs {
  records: number;
  zones: number;
  rounds: number;
  baseline: string | undefined;
  /** `--fresh`: benches that support it give every round record sets it has not seen (new spec objects). */
  fresh: boolean;
}

/** The command line's size, rounds (`defaultRounds` when not given) and baseline. */
export function abArgs(defaultRounds: number): AbArgs {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '100000' },
      zones: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: String(defaultRounds) },
      baseline: { type: 'string' },
      fresh: { type: 'boolean', default: false },
    },
  });
  return {
    records: Number(values.records),
    zones: Number(values.zones),
    rounds: Number(values.rounds),
    baseline: values.baseline,
    fresh: values.fresh,
  };
}

/** Imports a module of the checkout at `root` by its path in it (`src/zones/catalog.ts`). */
export function moduleLoader(root: string) {
  return (file: string) => import(pathToFileURL(path.join(root, file)).href);
}

/**
 * Each version's steps, labelled: `current` (this checkout), after `baseline` when one is given.
 * `version` takes a checkout's root and loads what a round runs from it.
 */
export async function sides<V>(
  version: (root: string) => Promise<V>,
  baseline: string | undefined,
): Promise<[string, V][]> {
  const list: [string, V][] = [['current', await version(path.resolve(import.meta.dirname, '../..'))]];
  if (baseline) list.unshift(['baseline', await version(path.resolve(baseline))]);
  return list;
}

/** The middle value (the upper one of an even count). */
export function median(list: readonly number[]): number {
  return [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
}

/** CPU milliseconds (user and system) this process used since `since`. */
export function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}
