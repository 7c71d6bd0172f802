/**
 * The main thread's CPU for a folder's reload after a one-record edit, as `serve` wires the folder
 * (a record-table-backed `MemoryStore`, an in-memory `StateStore`, the folder's change safety, a
 * parse pool of two threads), on a folder written as `bench/scale.ts` writes it (files of 1,000
 * documents). Each round loads the folder into empty ones, then rewrites one file in the middle of
 * the folder `--edits` times, each time with one record's value changed, and reloads it
 * as the watcher's event on it starts a reload (its quiet period left out): the calling thread's CPU
 * (`process.threadCpuUsage`: stat and read, what the file defines, applying the difference) and the
 * reload's wall time (the parse thread's work in it), the first edit after the load reported apart.
 * With `--baseline DIR` (another checkout, its node_modules linked) rounds of the two versions
 * alternate in this one process; the first round of each is a warm-up, reported and not counted.
 *
 *   node --expose-gc bench/folder-edit-cpu.ts [--records 300000] [--zones 3000] [--rounds 5] [--baseline DIR]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { abArgs, median, sides } from './lib/ab.ts';
import { folderWiring } from './lib/folder.ts';
import { makeTempDir, removeTempDir } from './lib/proc.ts';
import { writeScaleFolder } from './lib/zone.ts';

const { records, zones, rounds, baseline } = abArgs(5);
const EDITS = 6;
const PER_FILE = 1000;
const tmp = makeTempDir('zonekeeper-bench-folder-edit-');
const dir = path.join(tmp, 'manifests');
const files = writeScaleFolder(dir, records, zones, PER_FILE);
const edited = path.join(dir, `f${String(Math.floor(files / 2)).padStart(5, '0')}.yaml`);
const original = readFileSync(edited, 'utf8');
const gc = (globalThis as { gc?: () => void }).gc;

/** The file with the values of its middle record set's records replaced by one address. */
function editedText(e: number): string {
  let at = -1;
  for (let i = 0; i < PER_FILE / 2; i++) {
    const next = original.indexOf('records: ["', at + 1);
    if (next < 0) break;
    at = next;
  }
  const start = at + 'records: ["'.length;
  const end = original.indexOf('"]', start);
  return `${original.slice(0, start)}198.51.100.${(e % 250) + 1}${original.slice(end)}`;
}

/**
 * The reload a watcher's event on the edited file starts (its quiet period left out): with the file
 * named where the version takes the watchers' names (`hints`), else a reload of the folder.
 */
function reloadAfterEvent(folder: { reload(): Promise<void> }): Promise<void> {
  const inside = folder as unknown as { hints?: unknown; reloadWith?: () => Promise<void> };
  if (inside.reloadWith === undefined || inside.hints === undefined) return folder.reload();
  inside.hints = new Set([edited]);
  return inside.reloadWith.call(folder);
}

async function version(root: string) {
  const wire = await folderWiring(root);
  return async (): Promise<{ cpuMs: number[]; wallMs: number[]; events: number[] }> => {
    writeFileSync(edited, original);
    const { store, pool, folder } = await wire(dir);
    await folder.reload();
    let seen = 0;
    store.watch(() => seen++);
    gc?.();
    const cpuMs: number[] = [];
    const wallMs: number[] = [];
    const events: number[] = [];
    // With ZONEKEEPER_BENCH_EDIT_PROFILE=FILE: a CPU profile of the edits alone (the last round's).
    const profileTo = process.env.ZONEKEEPER_BENCH_EDIT_PROFILE;
    const session = profileTo === undefined ? undefined : new Session();
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    for (let e = 0; e < EDITS; e++) {
      writeFileSync(edited, editedText(e));
      // The file's stamp must differ from the last read's (the same size, a later mtime).
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen = 0;
      const before = process.threadCpuUsage();
      const started = performance.now();
      await reloadAfterEvent(folder);
      wallMs.push(performance.now() - started);
      const used = process.threadCpuUsage(before);
      cpuMs.push((used.user + used.system) / 1000);
      events.push(seen);
    }
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(profileTo!, JSON.stringify(profile));
      session.disconnect();
    }
    await pool.close();
    writeFileSync(edited, original);
    return { cpuMs, wallMs, events };
  };
}

try {
  const versions = await sides(version, baseline);
  const first = new Map<string, number[]>();
  const later = new Map<string, number[]>();
  const firstWall = new Map<string, number[]>();
  const laterWall = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, label: string, ...v: number[]) =>
    (m.get(label) ?? m.set(label, []).get(label)!).push(...v);
  process.stdout.write(
    `${records} record sets in ${zones} zones, ${files} files, ${EDITS} edits of one file per round, ${rounds} alternating rounds\n`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const [label, run] of round % 2 === 0 ? versions : [...versions].reverse()) {
      const { cpuMs, wallMs, events } = await run();
      if (round > 0) {
        push(first, label, cpuMs[0]!);
        push(later, label, ...cpuMs.slice(1));
        push(firstWall, label, wallMs[0]!);
        push(laterWall, label, ...wallMs.slice(1));
      }
      process.stdout.write(
        `  round ${round + 1} ${label.padEnd(8)} main thread CPU per reload ${cpuMs.map((c) => c.toFixed(1)).join(' ')} ms; wall ${wallMs.map((w) => w.toFixed(0)).join(' ')} ms; store events ${events.join(' ')}\n`,
      );
      gc?.();
    }
  }
  const spread = (list: number[]) =>
    `${median(list).toFixed(1)} ms (${Math.min(...list).toFixed(1)}–${Math.max(...list).toFixed(1)})`;
  for (const label of [...first.keys()].sort())
    process.stdout.write(
      `${label.padEnd(8)} main thread CPU: first edit ${spread(first.get(label)!)}, later edits ${spread(later.get(label)!)}; wall: first ${spread(firstWall.get(label)!)}, later ${spread(laterWall.get(label)!)}\n`,
    );
} finally {
  removeTempDir(tmp);
}
