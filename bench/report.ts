/**
 * Turns results JSON from bench/run.ts and bench/scale.ts into the markdown of docs/benchmarks.md.
 *
 *   node bench/report.ts RESULTS.json [SCALE.json...] [--write docs/benchmarks.md] [--title TEXT]
 *
 * Without --write the markdown goes to stdout. With --write, the part of the file between
 * `<!-- bench:run:begin -->` and `<!-- bench:run:end -->` (or the `bench:scale` markers for scale
 * results) is replaced, and the rest of the file is left alone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { RunResults } from './run.ts';
import type { ScaleResults } from './scale.ts';

type AnyResults = RunResults | ScaleResults;
type ServerResult = RunResults['servers'][number];

function main(): number {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { write: { type: 'string' }, title: { type: 'string' } },
  });
  if (positionals.length === 0) {
    process.stderr.write(
      'usage: node bench/report.ts RESULTS.json [SCALE.json...] [--write FILE] [--title TEXT]\n',
    );
    return 2;
  }
  const sections: { marker: 'run' | 'scale'; markdown: string }[] = [];
  for (const file of positionals) {
    const results = JSON.parse(readFileSync(file, 'utf8')) as AnyResults;
    if (results.kind === 'zonekeeper-bench-run') {
      sections.push({ marker: 'run', markdown: runMarkdown(results, file, values.title) });
    } else if (results.kind === 'zonekeeper-bench-scale') {
      sections.push({ marker: 'scale', markdown: scaleMarkdown(results, file, values.title) });
    } else {
      throw new Error(
        `${file}: not a bench result (kind ${JSON.stringify((results as { kind?: string }).kind)})`,
      );
    }
  }
  if (!values.write) {
    process.stdout.write(sections.map((s) => s.markdown).join('\n'));
    return 0;
  }
  let doc = readFileSync(values.write, 'utf8');
  for (const marker of ['run', 'scale'] as const) {
    const mine = sections.filter((s) => s.marker === marker);
    if (mine.length === 0) continue;
    const begin = `<!-- bench:${marker}:begin -->`;
    const end = `<!-- bench:${marker}:end -->`;
    const from = doc.indexOf(begin);
    const to = doc.indexOf(end);
    if (from < 0 || to < from) throw new Error(`${values.write} has no ${begin} … ${end} section`);
    doc = `${doc.slice(0, from + begin.length)}\n\n${mine.map((s) => s.markdown).join('\n')}\n${doc.slice(to)}`;
  }
  writeFileSync(values.write, doc);
  process.stderr.write(`updated ${values.write}\n`);
  return 0;
}

// ---------------------------------------------------------------------------------------------------
// Throughput

const n = (x: number | undefined | null) =>
  x === undefined || x === null ? '–' : Math.round(x).toLocaleString('en-US');
const ms = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2));
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? undefined : a / b;
const fmtRatio = (r: number | undefined) => (r === undefined ? '–' : `${r.toFixed(2)}×`);

function runMarkdown(r: RunResults, file: string, title?: string): string {
  const o = r.options;
  const lines: string[] = [];
  lines.push(
    `#### ${title ?? `Throughput: servers on CPUs ${o.cores}, dnsperf on CPUs ${o.clientCores}, ${r.date.slice(0, 10)}`}`,
  );
  lines.push('');
  lines.push(`- Date: ${r.date}; results: \`${file}\``);
  lines.push(`- Command (Node 24; here \`npx node\` runs the pinned one): \`${r.command}\``);
  lines.push(
    `- Machine: ${r.machine.nproc} CPUs (${r.machine.cpuModel}), ${r.machine.memTotalGiB} GiB, ${r.machine.kernel}; ` +
      `load average at start ${r.machine.loadAvgAtStart}`,
  );
  lines.push(
    `- Versions: Zonekeeper ${r.versions.zonekeeper} on Node ${r.versions.node}, Knot ${r.versions.knotd}, ` +
      `PowerDNS ${r.versions.pdns_server}, dnsperf ${r.versions.dnsperf}`,
  );
  lines.push(
    `- Zone: ${n(r.zone.recordSets)} record sets (${n(r.zone.records)} records with SOA and NS); ` +
      `${n(r.zone.queryLines)} queries in the file, mix below`,
  );
  lines.push(
    `- Servers on CPUs \`${o.cores}\`; dnsperf on CPUs \`${o.clientCores}\` ` +
      `(\`-c ${o.clients} -T ${o.threads} -q ${o.outstanding} -t ${o.timeout}\`); ` +
      `${o.duration} s per measured run`,
  );
  lines.push('');
  lines.push(
    '| server | configuration | loss-free QPS | lost | QPS per core | unlimited QPS (lost) | avg ms | ' +
      `p50 / p99 ms at ${Math.round(Number(o.latencyLoad) * 100)}% | QPS per server CPU-second | first answer | RSS (PSS) MiB |`,
  );
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const coreCount = countCpus(String(o.cores));
  for (const s of r.servers) {
    const m = s.summary;
    if (!m) {
      lines.push(`| ${s.label} | ${config(s)} | failed: ${(s.error ?? '').split('\n')[0]} | | | | | | | | |`);
      continue;
    }
    lines.push(
      `| ${s.label} | ${config(s)} | ${n(m.ratedQps)} | ${m.lossFree ? '0' : `${n(m.ratedLost)} (${m.ratedLostPct}%)`} | ` +
        `${n(m.ratedQps / coreCount)} | ${n(m.maxQps)} (${m.maxLostPct}%) | ${ms(m.ratedAvgMs)} | ` +
        `${ms(m.p50Ms)} / ${ms(m.p99Ms)} | ${n(m.qpsPerServerCpu)} | ${n(s.readyMs)} ms | ` +
        `${s.rssAfterLoadMiB ?? '–'} (${s.pssAfterLoadMiB ?? '–'}) |`,
    );
  }
  lines.push('');
  lines.push(...ratiosMarkdown(r, coreCount));
  const omitted = r.servers.flatMap((s) => {
    const o = s.config?.['omitted (unknown to this PowerDNS)'];
    return o === undefined ? [] : [`${s.label}: \`${o}\` left out, this PowerDNS does not know it`];
  });
  const notes = [...r.notes, ...omitted];
  if (notes.length > 0) {
    lines.push('');
    for (const note of notes) lines.push(`- Note: ${note}`);
  }
  lines.push('');
  return lines.join('\n');
}

function ratiosMarkdown(r: RunResults, coreCount: number): string[] {
  const byId = new Map(r.servers.map((s) => [s.id, s]));
  const zk = byId.get('zonekeeper')?.summary;
  const targets: { id: ServerResult['id']; target?: number }[] = [
    { id: 'knot', target: 1 },
    { id: 'pdns-nocache', target: 4 },
    { id: 'pdns-cache' },
    { id: 'coredns' },
  ];
  const out = [
    '| Zonekeeper ÷ | loss-free QPS per core | QPS per server CPU-second | target (QPS per core) | met |',
    '| --- | ---: | ---: | ---: | :---: |',
  ];
  for (const { id, target } of targets) {
    const other = byId.get(id);
    if (!other) continue;
    const q = ratio(zk?.ratedQps, other.summary?.ratedQps);
    const c = ratio(zk?.qpsPerServerCpu, other.summary?.qpsPerServerCpu);
    const lossFree = zk?.lossFree === true && other.summary?.lossFree === true;
    const met =
      target === undefined || q === undefined
        ? '–'
        : q >= target && lossFree
          ? 'yes'
          : q >= target
            ? 'loss'
            : 'no';
    out.push(
      `| ${other.label} | ${fmtRatio(q)} | ${fmtRatio(c)} | ${target === undefined ? '–' : `≥ ${target}×`} | ${met} |`,
    );
  }
  out.push('');
  out.push(
    `All servers ran on the same ${coreCount} CPU${coreCount === 1 ? '' : 's'}, so the ratio of QPS per core ` +
      'is the ratio of loss-free QPS. QPS per server CPU-second divides the answered queries by the CPU time ' +
      'the server itself used (from /proc), which takes out most of the noise of a shared machine.',
  );
  return out;
}

function config(s: ServerResult): string {
  const c = s.config ?? {};
  switch (s.id) {
    case 'zonekeeper':
      return `workers ${c.workers ?? '?'}`;
    case 'knot':
      return `udp-workers ${c['udp-workers'] ?? '?'}`;
    case 'coredns':
      return `${c.plugins ?? '?'}, GOMAXPROCS ${c.gomaxprocs ?? '?'}`;
    default:
      return `receiver-threads ${c['receiver-threads'] ?? '?'}, distributor-threads ${c['distributor-threads'] ?? '?'}, cache-ttl ${c['cache-ttl'] ?? '?'}`;
  }
}

function countCpus(list: string): number {
  let count = 0;
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    count += b === undefined ? 1 : b - a! + 1;
  }
  return count;
}

// ---------------------------------------------------------------------------------------------------
// Scale

function scaleMarkdown(r: ScaleResults, file: string, title?: string): string {
  const lines: string[] = [];
  const g = r.generated;
  lines.push(
    `#### ${title ?? `Scale: ${n(g.recordSets)} records in ${n(g.zones)} zones, ${r.date.slice(0, 10)}`}`,
  );
  lines.push('');
  lines.push(`- Date: ${r.date}; results: \`${file}\``);
  lines.push(`- Command: \`${r.command}\``);
  lines.push(
    `- Machine: ${r.machine.nproc} CPUs (${r.machine.cpuModel}), ${r.machine.memTotalGiB} GiB, ${r.machine.kernel}; ` +
      `load average at start ${r.machine.loadAvgAtStart}; Zonekeeper ${r.versions.zonekeeper} on Node ${r.versions.node}, ` +
      `CPUs \`${r.options.cores}\`, workers ${r.options.workers ?? '?'}`,
  );
  lines.push(
    `- Manifests: ${n(g.files)} files, ${(g.bytes / 2 ** 20).toFixed(0)} MiB; the biggest zone has ` +
      `${n(g.bigZoneRecordSets)} record sets in files of ${n(Number(r.options.perFile))} documents; ` +
      `edits are ${r.options.editMode ?? 'in-place'} writes of one of those files`,
  );
  lines.push('');
  const s = r.start;
  const m = r.memory;
  const e = r.editSummary;
  lines.push('| measure | value |');
  lines.push('| --- | ---: |');
  lines.push(`| start → first DNS response (any rcode) | ${sec(s?.firstResponseMs)} |`);
  lines.push(`| start → first correct answer (biggest zone) | ${sec(s?.firstCorrectAnswerMs)} |`);
  lines.push(
    `| start → correct answers from first, middle, last and biggest zone | ${sec(s?.allProbesCorrectMs)} |`,
  );
  lines.push(`| start → /readyz 200 | ${sec(s?.readyzMs)} |`);
  lines.push(
    m
      ? `| resident memory once loaded: RSS (PSS), ${m.processes} processes | ${n(m.rssMiB)} MiB (${n(m.pssMiB)} MiB) |`
      : '| resident memory once loaded | – |',
  );
  lines.push(`| peak RSS | ${m ? `${n(m.peakRssMiB)} MiB` : '–'} |`);
  if (r.edits.length === 0) {
    lines.push('| one-record change → new answer | not measured |');
  } else {
    const firstTimes = r.edits.flatMap((x) => (x.ms === null ? [] : [x.ms])).sort((a, b) => a - b);
    const firstMedian = firstTimes.length > 0 ? firstTimes[Math.floor(firstTimes.length / 2)] : undefined;
    lines.push(
      `| one-record change → new answer from one worker, median of ${r.edits.length} | ${sec(firstMedian)} |`,
    );
    lines.push(
      `| one-record change → new answer from every worker, median of ${r.edits.length} (min – max) | ` +
        `${e && e.medianMs !== null ? `${sec(e.medianMs)} (${sec(e.minMs)} – ${sec(e.maxMs)})` : '–'} |`,
    );
    const slowest = Math.max(0, ...r.edits.map((x) => x.maxProbeMs));
    const unanswered = r.edits.reduce((a, x) => a + x.timeouts, 0);
    lines.push(`| slowest probe answer while an edit was applied | ${n(slowest)} ms |`);
    lines.push(`| probes unanswered within 1 s while edits were applied | ${unanswered} |`);
  }
  if (r.error) {
    lines.push('');
    lines.push(`- Failed: ${r.error.split('\n')[0]}`);
    const f = r.memoryAtFailure;
    if (f)
      lines.push(
        `- When it gave up (${sec(f.afterMs)} after start): RSS ${n(f.rssMiB)} MiB, peak ${n(f.peakRssMiB)} MiB`,
      );
    const tail = (r.logTail ?? '').trim().split('\n').slice(-3).join(' / ');
    if (tail) lines.push(`- Last log lines: \`${tail.replace(/`/g, "'").slice(0, 400)}\``);
  }
  lines.push('');
  return lines.join('\n');
}

function sec(msValue: number | null | undefined): string {
  if (msValue === null || msValue === undefined) return '–';
  return msValue >= 10_000
    ? `${(msValue / 1000).toFixed(1)} s`
    : `${Math.round(msValue).toLocaleString('en-US')} ms`;
}

process.exitCode = main();
