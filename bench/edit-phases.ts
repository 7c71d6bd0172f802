/**
 * Where a one-record edit's time goes, thread by thread: reads the results of `bench/scale.ts
 * --cpu-prof DIR` (each edit's write time on the profiles' monotonic clock) and the CPU profiles of
 * every thread, and splits the samples after each write into phases (the innermost function of a
 * sample that names one: reading the folder, the store, the zone model, the overlay, …), with when
 * each phase was first and last seen (ms after the write) and the CPU it took (sampled, so ±1 ms a
 * phase at the default 1 ms interval). Samples under a state-file fsync are listed apart: the fsync
 * runs on a libuv pool thread while the main thread waits, yet V8 samples the wait under the call.
 *
 *   node bench/scale.ts ... --edits 5 --cpu-prof DIR --out RESULTS.json
 *   node bench/edit-phases.ts RESULTS.json DIR [--after-ms 400]
 *
 * `--after-ms`: how long after the new answer reached every DNS thread samples still count (the
 * content hash of the serial runs then, off the path to the answer).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Profile } from './lib/cpu-profile.ts';

interface Edit {
  allMs: number | null;
  writtenAtUs?: number;
}

/** Innermost match wins: [function name, file suffix (or '' for any), phase]. */
const RULES: [RegExp, RegExp, string][] = [
  [/^\(garbage collector\)$/, /^$/, 'garbage collection'],
  // The fsync runs on a libuv pool thread (strace shows it there), yet the main thread's profile
  // shows its samples under the call that queued it while the loop waits: not this thread's CPU.
  [/^fdatasync$|^fsync$/, /^$/, 'state file: fsync (sampled here, run on a pool thread)'],
  [/^contentHash$/, /zone-model\.ts$/, 'content hash (after the answer)'],
  [/^patchImage$/, /zone-apply\.ts$/, 'overlay and journal entry (patchImage)'],
  [/^applyOverlay$|^applyImage$/, /zone-apply\.ts$/, 'thread: swap in the overlay'],
  [/^onMessage$|^handle$/, /dns-worker\.ts$/, 'thread: messages'],
  [
    /.*/,
    /query-handler\.ts$|query\.ts$|answer\.ts$|udp-endpoint\.ts$|response-cache\.ts$/,
    'thread: answering',
  ],
  [/.*/, /parse-worker\.ts$|js-yaml/, 'parse thread: YAML'],
  [/^applyZone$/, /worker-pool-backend\.ts$/, 'backend: post to threads'],
  [/^assign$/, /serial-assigner\.ts$/, 'serial'],
  [/^takeChange$/, /zone-state\.ts$/, 'zone model update'],
  [/.*/, /status-writer\.ts$/, 'statuses'],
  [/^readServed$|^holdOf$/, /zone-reconciler\.ts$/, 'zone reconcile: read'],
  [/.*/, /zone-reconciler\.ts$/, 'zone reconcile: other'],
  [/.*/, /record-reconciler\.ts$/, 'record reconcile'],
  [/.*/, /catalog(-feed)?\.ts$/, 'catalog'],
  [
    /^readChanged$|^listManifestTree$|^list$/,
    /manifest-source\.ts$|load-manifests\.ts$/,
    'folder: list, stat, read',
  ],
  [/^fileState$/, /manifest-source\.ts$/, 'folder: check documents'],
  [/.*/, /memory-store\.ts$/, 'store'],
  [/.*/, /state-file\.ts$/, 'state file'],
  [/.*/, /manifest-source\.ts$/, 'folder: other'],
  [/.*/, /controller\.ts$|work-queue\.ts$/, 'controller'],
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'after-ms': { type: 'string', default: '400' } },
});
const [resultsFile, dir] = positionals;
if (!resultsFile || !dir) {
  process.stderr.write('usage: node bench/edit-phases.ts RESULTS.json PROFILE_DIR [--after-ms 400]\n');
  process.exit(2);
}
const afterUs = Number(values['after-ms']) * 1000;
const edits = (JSON.parse(readFileSync(resultsFile, 'utf8')) as { edits: Edit[] }).edits;

interface Thread {
  name: string;
  /** Per sample: its time (µs, monotonic) and phase, idle samples left out. */
  times: number[];
  phases: string[];
}

const threads: Thread[] = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const phaseOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = phaseOf.get(id);
    if (known !== undefined) return known;
    let phase = 'other';
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const { functionName, url } = byId.get(x)!.callFrame;
      const rule = RULES.find(([fn, where]) => fn.test(functionName) && where.test(url));
      if (rule) {
        phase = rule[2];
        break;
      }
    }
    phaseOf.set(id, phase);
    return phase;
  };
  const urls = profile.nodes.map((n) => n.callFrame.url).join('\n');
  const name = urls.includes('parse-worker.ts')
    ? 'parse thread'
    : urls.includes('dns-worker-main.ts')
      ? 'DNS thread'
      : urls.includes('cli/serve.ts')
        ? 'main thread'
        : 'other thread';
  const thread: Thread = { name: `${name} (${file.split('.').slice(-3, -2)[0]})`, times: [], phases: [] };
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const { functionName } = byId.get(profile.samples[i]!)!.callFrame;
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(root)') continue;
    thread.times.push(t);
    thread.phases.push(classify(profile.samples[i]!));
  }
  threads.push(thread);
}
threads.sort((a, b) => a.name.localeCompare(b.name));

const totals = new Map<string, number[]>();
edits.forEach((edit, e) => {
  if (edit.writtenAtUs === undefined || edit.allMs === null) return;
  const from = edit.writtenAtUs;
  const answered = from + edit.allMs * 1000;
  const to = answered + afterUs;
  process.stdout.write(`edit ${e + 1}: new answer on every DNS thread after ${edit.allMs} ms\n`);
  for (const thread of threads) {
    const phases = new Map<string, { first: number; last: number; us: number; beforeUs: number }>();
    let prev: number | undefined;
    let before = 0;
    let after = 0;
    for (let i = 0; i < thread.times.length; i++) {
      const t = thread.times[i]!;
      // The sample's interval: from the previous sample (at most 2 ms, so an idle gap is not counted).
      const dt = prev === undefined ? 1000 : Math.min(2000, t - prev);
      prev = t;
      if (t < from || t > to) continue;
      const phase = thread.phases[i]!;
      const p = phases.get(phase) ?? { first: t, last: t, us: 0, beforeUs: 0 };
      p.last = t;
      p.us += dt;
      if (t <= answered) {
        p.beforeUs += dt;
        before += dt;
      } else after += dt;
      phases.set(phase, p);
    }
    if (phases.size === 0) continue;
    process.stdout.write(
      `  ${thread.name}: CPU ${(before / 1000).toFixed(0)} ms before the answer, ${(after / 1000).toFixed(0)} ms in the ${values['after-ms']} ms after\n`,
    );
    for (const [phase, p] of [...phases].sort((a, b) => a[1].first - b[1].first)) {
      process.stdout.write(
        `    ${((p.first - from) / 1000).toFixed(0).padStart(5)}–${((p.last - from) / 1000).toFixed(0).padEnd(5)} ms  CPU ${(p.us / 1000).toFixed(1).padStart(6)} ms (${(p.beforeUs / 1000).toFixed(1).padStart(6)} before the answer)  ${phase}\n`,
      );
      const key = `${thread.name.replace(/ \(.*\)$/, '')}: ${phase}`;
      totals.set(key, [...(totals.get(key) ?? []), p.beforeUs / 1000]);
    }
  }
});
process.stdout.write('\nmedian CPU before the answer per edit (ms; edits without the phase count as 0):\n');
const n = edits.filter((e) => e.writtenAtUs !== undefined && e.allMs !== null).length;
for (const [key, list] of [...totals].sort((a, b) => a[0].localeCompare(b[0]))) {
  const all = [...list, ...Array<number>(Math.max(0, n - list.length)).fill(0)].sort((a, b) => a - b);
  process.stdout.write(`  ${all[Math.floor(all.length / 2)]!.toFixed(1).padStart(7)}  ${key}\n`);
}
