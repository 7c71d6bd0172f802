/**
 * CPU time per answered query of a whole server under dnsperf: the zone and query mix of
 * `bench/run.ts`, one server at a time pinned with taskset, several closed-loop dnsperf runs, and for
 * each run the server's own CPU seconds (user + system of its process tree, from /proc) divided by
 * the queries it answered. Unlike QPS this hardly depends on what else runs on the machine, so it is
 * the figure to compare before and after a change to the answer path (docs/benchmarks.md).
 *
 *   npx node bench/server-cpu.ts [--servers zonekeeper,knot,coredns] [--records 10000] [--runs 5]
 *                                [--duration 8] [--cores 1] [--client-cores 0] [--qps N]
 *                                [--baseline DIR] [--rounds N]
 *
 * `--qps N` sends at a fixed rate (dnsperf -Q) instead of closed loop: the CPU per query of a server
 * depends on how many datagrams each wake-up finds, so before/after comparisons on a busy machine are
 * fairest at one rate both sides sustain.
 * `--baseline DIR` also measures the Zonekeeper of another checkout (e.g. `git worktree add DIR REV`
 * with its own `npm ci`) with the same zone and queries; `--rounds N` repeats the whole sequence N
 * times (baseline, this checkout, each server in turn), so before and after alternate in time and a
 * slow moment of the machine does not fall on one side only.
 * Prints one line per run and a summary per server (median and range of µs per answered query).
 * Zonekeeper gets `--workers <CPUs in --cores>`. Nothing is written; no answer check is made
 * (`bench/run.ts` checks the answers of every server).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runDnsperf } from './lib/dnsperf.ts';
import { freePort, makeTempDir, parseCpuList, removeTempDir } from './lib/proc.ts';
import { generateQueries, writeQueryFile, ZoneOracle } from './lib/queries.ts';
import { type Fixture, SERVER_IDS, type ServerId, startServer } from './lib/servers.ts';
import { assemble, classManifest, generateZone, writeZoneManifests, zoneFileText } from './lib/zone.ts';

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: 'zonekeeper' },
    records: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '5' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    cores: { type: 'string', default: '1' },
    'client-cores': { type: 'string', default: '0' },
    'query-lines': { type: 'string', default: '1000000' },
    qps: { type: 'string' },
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '1' },
  },
});
const servers = values.servers.split(',') as ServerId[];
for (const id of servers) if (!SERVER_IDS.includes(id)) throw new Error(`unknown server ${id}`);
const records = Number(values.records);

const tmp = makeTempDir('server-cpu');
try {
  const origin = 'bench.example.';
  const nameServers = [`ns1.${origin}`, `ns2.${origin}`];
  const zone = generateZone(origin, { name: 'bench', namespace: 'bench' }, records, {
    withNameServers: true,
  });
  const manifestsDir = path.join(tmp, 'manifests');
  mkdirSync(manifestsDir, { recursive: true });
  writeFileSync(path.join(manifestsDir, '00-class.yaml'), classManifest(nameServers));
  writeZoneManifests(manifestsDir, zone);
  const assembled = assemble(zone, nameServers);
  const zoneFile = path.join(tmp, 'bench.example.zone');
  writeFileSync(zoneFile, zoneFileText(assembled, 1));
  const queryFile = path.join(tmp, 'queries.txt');
  writeQueryFile(queryFile, generateQueries(origin, records, Number(values['query-lines'])));
  const fixture: Fixture = {
    tmp,
    manifestsDir,
    zoneFile,
    origin,
    cores: values.cores,
    coreCount: parseCpuList(values.cores).length,
    ready: {
      name: `h1.${origin}`,
      type: 'A',
      answer: new ZoneOracle(assembled).expect(`h1.${origin}`, 'A').answer,
    },
    pdnsDistributors: 1,
  };
  /** Each server measured, in order; Zonekeeper twice with `--baseline` (the other checkout first). */
  interface Side {
    label: string;
    id: ServerId;
    root?: string;
  }
  const sides = servers.flatMap((id): Side[] =>
    id === 'zonekeeper' && values.baseline
      ? [
          { label: 'zonekeeper (baseline)', id, root: path.resolve(values.baseline) },
          { label: 'zonekeeper', id },
        ]
      : [{ label: id, id }],
  );
  const perQuery = new Map<string, number[]>(sides.map((side) => [side.label, []]));
  const rounds = Number(values.rounds);
  for (let round = 1; round <= rounds; round++) {
    for (const [index, side] of sides.entries()) {
      const port = await freePort();
      const server = await startServer(side.id, fixture, port, {
        ...(side.root ? { zonekeeperRoot: side.root } : {}),
        dirName: `${side.id}-${round}-${index}`,
      });
      try {
        const base = {
          port,
          queryFile,
          cores: values['client-cores'],
          clients: 8,
          threads: 1,
          outstanding: 100,
          timeout: 1,
          serverPid: server.proc.pid,
        };
        await runDnsperf({ ...base, duration: Number(values.warmup) });
        for (let run = 1; run <= Number(values.runs); run++) {
          // ZONEKEEPER_BENCH_PERF=FILE: `perf record` of the server during the first run (for profiling).
          const perfFile = run === 1 && round === 1 ? process.env.ZONEKEEPER_BENCH_PERF : undefined;
          const perf = perfFile
            ? spawn(
                'perf',
                [
                  'record',
                  '-F',
                  '2000',
                  '-g',
                  '-o',
                  `${perfFile}${sides.length > 1 ? `.${index}` : ''}`,
                  '-p',
                  String(server.proc.pid),
                  '--',
                  'sleep',
                  String(Number(values.duration) - 1),
                ],
                { stdio: 'ignore' },
              )
            : undefined;
          const r = await runDnsperf({
            ...base,
            duration: Number(values.duration),
            ...(values.qps ? { qps: Number(values.qps) } : {}),
          });
          if (perf) await new Promise((resolve) => perf.once('exit', resolve));
          const us = ((r.serverCpuS ?? Number.NaN) * 1e6) / r.completed;
          perQuery.get(side.label)!.push(us);
          console.log(
            `${side.label}${rounds > 1 ? ` round ${round}` : ''} run ${run}: ${Math.round(r.qps)} qps, lost ${r.lost}, ` +
              `server CPU ${r.serverCpuS?.toFixed(2)} s, ${us.toFixed(2)} µs per answered query`,
          );
        }
      } finally {
        await server.stop();
      }
    }
  }
  for (const [label, list] of perQuery) {
    const sorted = [...list].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `${label}: median ${median.toFixed(2)} µs per answered query, range ${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)} (${sorted.length} runs)`,
    );
  }
} finally {
  removeTempDir(tmp);
}
