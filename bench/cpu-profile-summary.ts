/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, e.g. from `bench/scale.ts --cpu-prof DIR`): where a
 * thread spent its samples, by source file and by function (self time), optionally only up to a
 * moment after the profile started (`--until-ms`, e.g. the start-up's "every zone answering" time)
 * and/or only from a moment on (`--from-ms`, e.g. the first answer's time, for what came after it);
 * with `--inclusive` also by function with its callees (a function on a stack twice counted once).
 *
 *   node bench/cpu-profile-summary.ts DIR/*.cpuprofile [--top 25] [--from-ms 10000] [--until-ms 30000] [--inclusive]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Profile } from './lib/cpu-profile.ts';
import { ROOT } from './lib/proc.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '25' },
    'from-ms': { type: 'string' },
    'until-ms': { type: 'string' },
    inclusive: { type: 'boolean', default: false },
  },
});
const top = Number(values.top);
const fromUs = values['from-ms'] === undefined ? 0 : Number(values['from-ms']) * 1000;
const untilUs = values['until-ms'] === undefined ? Infinity : Number(values['until-ms']) * 1000;

const where = (url: string): string => {
  if (url === '') return '(native / V8)';
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file.replace(/^.*node_modules\//, '');
};

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let t = 0;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (t > untilUs) break;
    if (t <= fromUs) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    total += dt;
  }
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') idle += us;
    const fn = `${functionName || '(anonymous)'} ${where(url)}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const f = url ? where(url) : functionName.startsWith('(') ? functionName : '(native / V8)';
    byFile.set(f, (byFile.get(f) ?? 0) + us);
  }
  const busy = total - idle;
  const line = (label: string, us: number) =>
    `  ${(us / 1e6).toFixed(2).padStart(8)} s ${((100 * us) / Math.max(busy, 1)).toFixed(1).padStart(5)} %  ${label}`;
  process.stdout.write(
    `${path.basename(file)}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy (percentages of busy)\n`,
  );
  process.stdout.write(' by file:\n');
  for (const [f, us] of [...byFile]
    .filter(([f]) => f !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    process.stdout.write(`${line(f, us)}\n`);
  process.stdout.write(' by function (self):\n');
  for (const [f, us] of [...byFunction]
    .filter(([f]) => !f.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    process.stdout.write(`${line(f, us)}\n`);
  if (values.inclusive) {
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const inclusive = new Map<string, number>();
    for (const [id, us] of selfUs) {
      if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
        const fn = `${functionName || '(anonymous)'} ${where(url)}${url ? `:${lineNumber + 1}` : ''}`;
        if (seen.has(fn)) continue;
        seen.add(fn);
        inclusive.set(fn, (inclusive.get(fn) ?? 0) + us);
      }
    }
    process.stdout.write(' by function (inclusive):\n');
    for (const [f, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top))
      process.stdout.write(`${line(f, us)}\n`);
  }
}
