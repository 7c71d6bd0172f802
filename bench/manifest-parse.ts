/**
 * A parse thread's work alone, on the calling thread: every file of a generated folder (the layout of
 * bench/scale.ts) read, parsed, checked (`parseManifestFileToSend`, as a parse thread does; a tree
 * without it, `parseManifestFile`) and encoded for the main thread
 * (`encodeDocuments`, 500 documents a message), the process's CPU time per round. With `--baseline`
 * (another checkout's root, its node_modules linked) the two trees alternate, in separate processes.
 *
 *   node bench/manifest-parse.ts [--records 100000] [--zones 1000] [--rounds 6] [--processes 3] [--baseline DIR]
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeTempDir, removeTempDir } from './lib/proc.ts';
import { writeScaleFolder } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    zones: { type: 'string', default: '1000' },
    'per-file': { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '6' },
    processes: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    // Internal: run the rounds on this folder with this tree and print the CPU seconds per round.
    child: { type: 'string' },
    tree: { type: 'string' },
  },
});

if (values.child !== undefined) {
  const tree = values.tree!;
  const parser = await import(path.join(tree, 'src/sources/manifests/manifest-parser.ts'));
  const modules = await import(path.join(tree, 'src/sources/front-door-modules.ts'));
  const doors = await modules.loadFrontDoors([]);
  const files = readdirSync(values.child)
    .sort()
    .map((f) => path.join(values.child!, f));
  const rounds: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const before = process.cpuUsage();
    for (const file of files) {
      // As the parse thread does (a tree without `parseManifestFileToSend` parses as `validate` does).
      const { parsed } = await (parser.parseManifestFileToSend ?? parser.parseManifestFile)(
        file,
        2 ** 30,
        doors,
      );
      for (let i = 0; i < parsed.documents.length; i += 500)
        // The verdicts on record values as the parse thread sends them (a tree without them ignores it).
        parser.encodeDocuments(parsed.documents.slice(i, i + 500), parsed.checked?.slice(i, i + 500));
    }
    const used = process.cpuUsage(before);
    rounds.push((used.user + used.system) / 1e6);
  }
  process.stdout.write(`${JSON.stringify(rounds)}\n`);
  process.exit(0);
}

const records = Number(values.records);
const zones = Number(values.zones);
const perFile = Number(values['per-file']);
const tmp = makeTempDir('zonekeeper-bench-manifest-parse-');
const dir = path.join(tmp, 'manifests');
const file = writeScaleFolder(dir, records, zones, perFile);
process.stdout.write(`${records} record sets in ${zones} zones, ${file} files\n`);

const here = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const trees = values.baseline === undefined ? [here] : [path.resolve(values.baseline), here];
const results = new Map<string, number[]>(trees.map((t) => [t, []]));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  for (let p = 0; p < Number(values.processes); p++) {
    // Alternate which tree goes first.
    for (const tree of p % 2 === 0 ? trees : [...trees].reverse()) {
      const out = execFileSync(
        process.execPath,
        [fileURLToPath(import.meta.url), '--child', dir, '--tree', tree, '--rounds', values.rounds],
        { encoding: 'utf8' },
      );
      const rounds = JSON.parse(out.trim().split('\n').at(-1)!) as number[];
      // The first round compiles and warms up: reported, not counted.
      results.get(tree)!.push(...rounds.slice(1));
      process.stdout.write(`${tree}: ${rounds.map((r) => r.toFixed(2)).join(' ')} s\n`);
    }
  }
  for (const [tree, rounds] of results)
    process.stdout.write(
      `${tree}: median ${median(rounds).toFixed(3)} s (${Math.min(...rounds).toFixed(2)}–${Math.max(...rounds).toFixed(2)}) of ${rounds.length} rounds\n`,
    );
} finally {
  removeTempDir(tmp);
}
