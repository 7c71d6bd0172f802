/**
 * Scale benchmark: many records in many zones served by one `zonekeeper serve`. Measures the time
 * from start to the first correct answers, resident memory once loaded, and the time from a
 * one-record edit in the biggest zone to the new answer. See bench/README.md.
 *
 *   node bench/scale.ts [--records 1000000] [--zones 10000] [--big-zone-records 100000] [--edits 5]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  freePort,
  keepTempDir,
  mainThreadCpuSeconds,
  makeTempDir,
  parseCpuList,
  processTree,
  ROOT,
  removeTempDir,
  sleep,
  spawnPinned,
  statusField,
  ThreadCpuTracker,
  treeCpuSeconds,
  treePssKiB,
  treeRssKiB,
} from './lib/proc.ts';
import { CLI, versions, waitForAnswer, zonekeeperHasWorkers } from './lib/servers.ts';
import { UdpClient } from './lib/udp-client.ts';
import {
  chunkFileName,
  classManifest,
  type GenRecord,
  type GenZone,
  generateZone,
  recordManifest,
  zoneManifest,
} from './lib/zone.ts';

const USAGE = `node bench/scale.ts [options]

  --records N           record sets in all zones together (default 1000000; one record each)
  --zones N             zones (default 10000)
  --big-zone-records N  record sets in the biggest zone, the one edited (default 100000)
  --per-file N          documents per manifest file of the biggest zone (default 5000)
  --zones-per-file N    small zones (with their record sets) per manifest file (default 50)
  --edits N             one-record edits to time (default 5)
  --edit-mode MODE      in-place (rewrite the file, default) or rename (write a new file elsewhere and
                        rename it over the old one, as editors, git and ConfigMap updates do)
  --cores LIST          taskset CPU list for Zonekeeper (default: every CPU)
  --workers N           pass --workers N when serve supports it (default: number of --cores CPUs)
  --max-old-space-size MB  V8 heap limit for Zonekeeper (default: Node's own)
  --node-flags "FLAGS"  more Node/V8 flags for Zonekeeper's process, space-separated (e.g. garbage
                        collector settings that NODE_OPTIONS does not take: "--min-semi-space-size=16")
  --max-rss-gib G       stop Zonekeeper if its processes together exceed G GiB resident (default 16),
                        to protect a shared machine
  --start-timeout S     give up waiting for the first answers after S seconds (default 3600)
  --edit-timeout S      give up waiting for an edit to show after S seconds (default 600)
  --settle S            wait S seconds after every probe answered before reading memory (default 3;
                        longer shows what V8 gives back once the heap is idle)
  --out FILE            results JSON (default bench/results/scale-<timestamp>.json)
  --cpu-prof DIR        write a V8 CPU profile of every Zonekeeper thread and process to DIR
                        (node --cpu-prof; written when Zonekeeper stops, after the edits)
  --heap                once loaded, have every Zonekeeper process collect garbage and report its
                        heap (process.memoryUsage, through bench/lib/heap-probe.ts)
  --restart             after the edits, stop Zonekeeper and start it again on the same state folder
                        (as an upgrade or a rescheduled pod does), and measure that start and its memory
  --keep                keep the temporary folder
`;

export interface ProcessMemory {
  pid: number;
  role: string;
  rssMiB: number;
  /** With --heap: after a full garbage collection (bench/lib/heap-probe.ts). */
  heapUsedMiB?: number;
  /** V8's committed heap (used, garbage not yet swept and free pages kept) after that collection. */
  heapTotalMiB?: number;
  externalMiB?: number;
  arrayBuffersMiB?: number;
  heapLimitMiB?: number;
  /** Each heap space that holds anything: used / committed MiB after that collection. */
  spacesMiB?: Record<string, string>;
}

export interface ScaleResults {
  kind: 'zonekeeper-bench-scale';
  date: string;
  command: string;
  machine: Record<string, string | number>;
  versions: Record<string, string>;
  options: Record<string, string | number | boolean | null>;
  generated: {
    zones: number;
    recordSets: number;
    bigZoneRecordSets: number;
    files: number;
    bytes: number;
    ms: number;
  };
  start?: {
    /** Spawn to the first DNS response of any kind (the socket is bound). */
    firstResponseMs: number | null;
    /** Spawn to the first correct answer for a record of the biggest zone. */
    firstCorrectAnswerMs: number | null;
    /**
     * Spawn to correct answers from the first, a middle and the last small zone and the biggest zone,
     * on 16 client ports at once (so from every worker process).
     */
    allProbesCorrectMs: number | null;
    /** Spawn to HTTP /readyz = 200. */
    readyzMs: number | null;
    /**
     * CPU seconds (user + system, /proc) of Zonekeeper's main thread, and of all its threads, when the
     * first correct answer came and when every probe answered: unlike the times, not stretched by
     * other work on a shared machine.
     */
    cpu?: {
      mainAtFirstAnswerS: number | null;
      /**
       * When every probe zone first answered on one client port (checked in turn, every 20 ms): closer
       * to when the last of them was programmed than `…AtAllProbesS`, read after every port answered.
       */
      mainAtProbesS: number | null;
      allAtProbesS: number | null;
      mainAtAllProbesS: number | null;
      allAtFirstAnswerS: number | null;
      allAtAllProbesS: number | null;
      /**
       * CPU seconds of the primary's threads by name at the first correct answer and when every probe
       * answered on every port (`ThreadCpuTracker`: `MainThread`, `zk-parse`, `zk-dns`, `V8Worker`,
       * `libuv-worker`, …, and `unseen`).
       */
      threadsAtFirstAnswer?: Record<string, { seconds: number; threads: number }>;
      threadsAtAllProbes?: Record<string, { seconds: number; threads: number }>;
    };
  };
  /** Summed over Zonekeeper's processes (the primary and its DNS workers). */
  memory?: {
    rssMiB: number;
    pssMiB: number;
    peakRssMiB: number;
    /** Peak RSS when /readyz first answered 200 (the load's peak, before what runs once it is done). */
    peakRssAtReadyMiB?: number;
    processes: number;
    settleMs: number;
    /** Per process: the primary (control plane and one DNS listener) and each DNS worker. */
    perProcess?: ProcessMemory[];
  };
  /**
   * `ms`: write → first probe (one client port) with the new answer; `allMs`: write → the new answer
   * on 16 client ports at once (every worker).
   */
  edits: {
    ms: number | null;
    allMs: number | null;
    probes: number;
    maxProbeMs: number;
    timeouts: number;
    /**
     * When the file was written, on the monotonic clock V8's CPU profiles use (µs): lines the edit up
     * with `--cpu-prof` profiles (bench/edit-phases.ts).
     */
    writtenAtUs?: number;
  }[];
  /** With --heap: each process's memory again once the edits are done (what a changed zone costs). */
  memoryAfterEdits?: ProcessMemory[];
  /** With --restart: SIGTERM to the first process's exit. */
  restartStopMs?: number;
  /** With --restart: the second start, on the first one's state folder (after its edits). */
  restart?: ScaleResults['start'];
  /** With --restart: memory `--settle` seconds after the second start's probes all answered. */
  restartMemory?: { rssMiB: number; pssMiB: number; peakRssMiB: number; perProcess?: ProcessMemory[] };
  /** Over `allMs` (the new answer from every worker). */
  editSummary?: { medianMs: number | null; minMs: number | null; maxMs: number | null };
  error?: string;
  memoryAtFailure?: { rssMiB: number; peakRssMiB: number; processes: number; afterMs: number };
  logTail?: string;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000000' },
      zones: { type: 'string', default: '10000' },
      'big-zone-records': { type: 'string', default: '100000' },
      'per-file': { type: 'string', default: '5000' },
      'zones-per-file': { type: 'string', default: '50' },
      edits: { type: 'string', default: '5' },
      'edit-mode': { type: 'string', default: 'in-place' },
      cores: { type: 'string' },
      workers: { type: 'string' },
      'max-old-space-size': { type: 'string' },
      'node-flags': { type: 'string' },
      'start-timeout': { type: 'string', default: '3600' },
      'max-rss-gib': { type: 'string', default: '16' },
      'edit-timeout': { type: 'string', default: '600' },
      settle: { type: 'string', default: '3' },
      out: { type: 'string' },
      keep: { type: 'boolean', default: false },
      heap: { type: 'boolean', default: false },
      restart: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const records = int(values.records, 'records');
  const zones = int(values.zones, 'zones');
  const big = Math.min(int(values['big-zone-records'], 'big-zone-records'), records);
  const perFile = int(values['per-file'], 'per-file');
  const zonesPerFile = int(values['zones-per-file'], 'zones-per-file');
  const edits = int(values.edits, 'edits', true);
  const editMode = values['edit-mode'];
  if (editMode !== 'in-place' && editMode !== 'rename') throw new Error('--edit-mode is in-place or rename');
  const cores = values.cores ?? `0-${os.availableParallelism() - 1}`;
  const coreCount = parseCpuList(cores).length;
  const startTimeoutMs = int(values['start-timeout'], 'start-timeout') * 1000;
  const maxRssKiB = Number(values['max-rss-gib']) * 2 ** 20;
  const editTimeoutMs = int(values['edit-timeout'], 'edit-timeout') * 1000;
  if (zones < 1 || (zones > 1 && records - big < zones - 1)) {
    throw new Error('need at least one record set per small zone: raise --records or lower --zones');
  }
  if (big < 100)
    throw new Error('--big-zone-records must be at least 100 (the edited record is an A record)');
  const date = new Date();
  const out =
    values.out ?? path.join(ROOT, 'bench/results', `scale-${date.toISOString().replace(/[:.]/g, '-')}.json`);

  const results: ScaleResults = {
    kind: 'zonekeeper-bench-scale',
    date: date.toISOString(),
    command: `node bench/scale.ts ${process.argv.slice(2).join(' ')}`.trim(),
    machine: {
      nproc: os.availableParallelism(),
      cpuModel: os.cpus()[0]?.model ?? '?',
      kernel: `${os.type()} ${os.release()}`,
      memTotalGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      loadAvgAtStart: os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' '),
    },
    versions: await versions(),
    options: {
      records,
      zones,
      bigZoneRecords: big,
      perFile,
      zonesPerFile,
      edits,
      editMode,
      cores,
      maxOldSpaceSize: values['max-old-space-size'] ?? null,
      nodeFlags: values['node-flags'] ?? null,
      cpuProf: values['cpu-prof'] ? path.resolve(values['cpu-prof']) : null,
    },
    generated: { zones, recordSets: 0, bigZoneRecordSets: big, files: 0, bytes: 0, ms: 0 },
    edits: [],
  };
  const save = () => {
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  };

  // 1. Generate.
  const tmp = makeTempDir('scale');
  const manifests = path.join(tmp, 'manifests');
  mkdirSync(manifests, { recursive: true });
  log(`generating ${records} record sets in ${zones} zones under ${manifests}`);
  const genStart = performance.now();
  const nameServers = ['ns1.zonekeeper.test.', 'ns2.zonekeeper.test.'];
  const counter = { files: 0, bytes: 0, recordSets: 0 };
  const write = (file: string, text: string) => {
    writeFileSync(path.join(manifests, file), text);
    counter.files++;
    counter.bytes += text.length;
  };
  write('00-class.yaml', classManifest(nameServers));

  const bigZone = generateZone('big.scale.example.', { name: 'big', namespace: 'scale' }, big);
  const bigDir = path.join(manifests, 'big');
  mkdirSync(bigDir);
  write(path.join('big', 'big-00-zone.yaml'), zoneManifest(bigZone));
  const bigChunks: string[][] = [];
  for (let start = 0; start < bigZone.records.length; start += perFile) {
    const docs: string[] = [];
    for (let i = start; i < Math.min(start + perFile, bigZone.records.length); i++) {
      docs.push(recordManifest(bigZone, i, bigZone.records[i]!));
    }
    bigChunks.push(docs);
    write(path.join('big', chunkFileName(bigZone, bigChunks.length - 1)), docs.join('---\n'));
  }
  counter.recordSets += bigZone.records.length;

  const small = zones - 1;
  const rest = records - big;
  const smallZones: GenZone[] = [];
  let docs: string[] = [];
  let fileIndex = 0;
  for (let z = 0; z < small; z++) {
    const count = Math.floor(rest / small) + (z < rest % small ? 1 : 0);
    const name = `z${String(z + 1).padStart(5, '0')}`;
    const zone = generateZone(`${name}.scale.example.`, { name, namespace: 'scale' }, count, { salt: z + 1 });
    if (z === 0 || z === Math.floor(small / 2) || z === small - 1) smallZones.push(zone);
    docs.push(zoneManifest(zone));
    zone.records.forEach((rec, i) => {
      docs.push(recordManifest(zone, i, rec));
    });
    counter.recordSets += zone.records.length;
    if ((z + 1) % zonesPerFile === 0 || z === small - 1) {
      write(`small-${String(++fileIndex).padStart(4, '0')}.yaml`, docs.join('---\n'));
      docs = [];
    }
  }
  results.generated = {
    zones,
    recordSets: counter.recordSets,
    bigZoneRecordSets: big,
    files: counter.files,
    bytes: counter.bytes,
    ms: Math.round(performance.now() - genStart),
  };
  log(
    `generated ${counter.recordSets} record sets in ${counter.files} files (${(counter.bytes / 2 ** 20).toFixed(0)} MiB) in ${results.generated.ms} ms`,
  );

  // The probes: an A record in the middle of the biggest zone (the one edited) and in three small zones.
  const editIndex = firstA(bigZone, Math.floor(big / 2));
  const editRecord = bigZone.records[editIndex]!;
  const probes = [
    probeOf(bigZone, editRecord),
    ...smallZones.map((z) => probeOf(z, z.records[firstA(z, 0)]!)),
  ];

  // 2. Start.
  const dnsPort = await freePort();
  const httpPort = await freePort();
  const workers = values.workers ? int(values.workers, 'workers') : coreCount;
  const hasWorkers = await zonekeeperHasWorkers();
  const args = [
    ...(values['max-old-space-size'] ? [`--max-old-space-size=${values['max-old-space-size']}`] : []),
    ...(values['node-flags']?.split(/\s+/).filter((f) => f !== '') ?? []),
    ...(values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`] : []),
    CLI,
    'serve',
    '--manifests',
    manifests,
    '--dns',
    `127.0.0.1:${dnsPort}`,
    '--http',
    `127.0.0.1:${httpPort}`,
    '--state-dir',
    path.join(tmp, 'state'),
    ...(hasWorkers ? ['--workers', String(workers)] : []),
  ];
  results.options.workers = hasWorkers ? workers : 'n/a (no --workers flag)';
  log(
    `starting zonekeeper on 127.0.0.1:${dnsPort} (CPUs ${cores}${hasWorkers ? `, --workers ${workers}` : ''})`,
  );
  const heapDir = values.heap ? path.join(tmp, 'heap') : undefined;
  if (heapDir) {
    mkdirSync(heapDir);
    process.env.ZONEKEEPER_BENCH_HEAP_DIR = heapDir;
    const probe = path.join(ROOT, 'bench/lib/heap-probe.ts');
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import ${probe}`.trim();
  }
  const t0 = performance.now();
  const proc = spawnPinned(cores, process.execPath, args, path.join(tmp, 'zonekeeper.log'));
  const client = new UdpClient(dnsPort);
  const threads = new ThreadCpuTracker(proc.pid);
  let restarted: ReturnType<typeof spawnPinned> | undefined;
  try {
    const start = emptyStart();
    results.start = start;
    await measureStart(start, {
      proc,
      client,
      threads,
      probes,
      t0,
      dnsPort,
      httpPort,
      startTimeoutMs,
      maxRssKiB,
    });
    const peakRssAtReadyMiB = mib(treeRssKiB(proc.pid, true));
    save();

    // 3. Memory once loaded (after a short settle so that start-up garbage can be collected).
    const settleMs = Math.round(Number(values.settle) * 1000);
    await sleep(settleMs);
    results.memory = {
      rssMiB: mib(treeRssKiB(proc.pid)),
      pssMiB: mib(treePssKiB(proc.pid)),
      peakRssMiB: mib(treeRssKiB(proc.pid, true)),
      peakRssAtReadyMiB,
      processes: processTree(proc.pid).length,
      settleMs,
      perProcess: await perProcessMemory(proc.pid, heapDir),
    };
    log(
      `RSS ${results.memory.rssMiB} MiB, PSS ${results.memory.pssMiB} MiB, peak RSS ${results.memory.peakRssMiB} MiB (at /readyz ${peakRssAtReadyMiB} MiB; ${results.memory.processes} processes)`,
    );
    for (const p of results.memory.perProcess ?? []) {
      const heap =
        p.heapUsedMiB === undefined
          ? ''
          : `, heap used ${p.heapUsedMiB} MiB (committed ${p.heapTotalMiB}), external ${p.externalMiB} MiB (array buffers ${p.arrayBuffersMiB} MiB), heap limit ${p.heapLimitMiB} MiB`;
      log(`  ${p.role} ${p.pid}: RSS ${p.rssMiB} MiB${heap}`);
      if (p.spacesMiB) log(`    spaces (used / committed MiB): ${JSON.stringify(p.spacesMiB)}`);
    }
    save();

    // 4. One-record edits in the biggest zone.
    const chunk = Math.floor(editIndex / perFile);
    const chunkFile = path.join(bigDir, chunkFileName(bigZone, chunk));
    for (let e = 0; e < edits; e++) {
      const address = `198.51.100.${(e % 250) + 1}`;
      const changed: GenRecord = { ...editRecord, rdata: address };
      const chunkDocs = [...bigChunks[chunk]!];
      chunkDocs[editIndex - chunk * perFile] = recordManifest(bigZone, editIndex, changed);
      const text = chunkDocs.join('---\n');
      const want = probeOf(bigZone, changed).answer;
      let started: number;
      let writtenAtUs: number;
      if (editMode === 'rename') {
        // Staged outside the watched folder (same file system), then renamed into place atomically.
        const staging = path.join(tmp, `staging-${e}.yaml`);
        writeFileSync(staging, text);
        started = performance.now();
        writtenAtUs = Number(process.hrtime.bigint() / 1000n);
        renameSync(staging, chunkFile);
      } else {
        started = performance.now();
        writtenAtUs = Number(process.hrtime.bigint() / 1000n);
        writeFileSync(chunkFile, text);
      }
      let probesSent = 0;
      let maxProbeMs = 0;
      let timeouts = 0;
      let ms: number | null = null;
      while (performance.now() - started < editTimeoutMs) {
        if (proc.exited()) throw new Error('zonekeeper exited after an edit');
        const got = await client.query(probes[0]!.name, 'A', 1000);
        probesSent++;
        if (!got) timeouts++;
        else maxProbeMs = Math.max(maxProbeMs, got.ms);
        if (got?.rcode === 0 && got.answer.join() === want) {
          ms = Math.round((performance.now() - started) * 10) / 10;
          break;
        }
        // About 1000 probes a second: 1 ms resolution without loading the server being measured.
        await sleep(1);
      }
      let allMs: number | null = null;
      if (ms !== null) {
        const spent = await waitForAnswer(
          dnsPort,
          { name: probes[0]!.name, type: 'A', answer: [want] },
          { timeoutMs: editTimeoutMs, alive: () => !proc.exited(), since: started, intervalMs: 1 },
        );
        allMs = Math.round(spent * 10) / 10;
      }
      results.edits.push({
        ms,
        allMs,
        probes: probesSent,
        maxProbeMs: Math.round(maxProbeMs * 10) / 10,
        timeouts,
        writtenAtUs,
      });
      log(
        `edit ${e + 1}: new answer after ${ms ?? 'TIMEOUT'} ms, on every worker after ${allMs ?? '-'} ms (${probesSent} probes, slowest ${maxProbeMs.toFixed(1)} ms, ${timeouts} unanswered)`,
      );
      bigChunks[chunk] = chunkDocs;
      // A restart asks for the record as the last edit left it.
      probes[0] = { name: probes[0]!.name, answer: want };
      save();
      await sleep(1000);
    }
    if (heapDir && edits > 0) {
      results.memoryAfterEdits = await perProcessMemory(proc.pid, heapDir);
      for (const p of results.memoryAfterEdits) {
        log(
          `after the edits: ${p.role} ${p.pid}: RSS ${p.rssMiB} MiB, heap used ${p.heapUsedMiB} MiB, external ${p.externalMiB} MiB`,
        );
      }
      save();
    }
    const times = results.edits.flatMap((e) => (e.allMs === null ? [] : [e.allMs])).sort((a, b) => a - b);
    results.editSummary = {
      medianMs: times.length > 0 ? times[Math.floor(times.length / 2)]! : null,
      minMs: times[0] ?? null,
      maxMs: times.at(-1) ?? null,
    };
    save();

    // 5. With --restart: the same command again on the same state folder (the files read again; the
    // state gives serials, creation times and what was served).
    if (values.restart) {
      // A graceful stop (SIGTERM, as Kubernetes and systemd send), however long it takes to finish.
      const stopping = performance.now();
      await proc.stop(120_000);
      results.restartStopMs = Math.round(performance.now() - stopping);
      log(`stopped in ${results.restartStopMs} ms; starting again on the same state folder`);
      const t1 = performance.now();
      restarted = spawnPinned(cores, process.execPath, args, path.join(tmp, 'zonekeeper-restart.log'));
      const restart = emptyStart();
      results.restart = restart;
      await measureStart(restart, {
        proc: restarted,
        client,
        threads: new ThreadCpuTracker(restarted.pid),
        probes,
        t0: t1,
        dnsPort,
        httpPort,
        startTimeoutMs,
        maxRssKiB,
      });
      await sleep(settleMs);
      results.restartMemory = {
        rssMiB: mib(treeRssKiB(restarted.pid)),
        pssMiB: mib(treePssKiB(restarted.pid)),
        peakRssMiB: mib(treeRssKiB(restarted.pid, true)),
        perProcess: await perProcessMemory(restarted.pid, heapDir),
      };
      log(
        `after the restart: RSS ${results.restartMemory.rssMiB} MiB, PSS ${results.restartMemory.pssMiB} MiB, peak RSS ${results.restartMemory.peakRssMiB} MiB`,
      );
    }
  } catch (e) {
    results.error = (e as Error).message;
    if (!results.memory && !proc.exited()) {
      // How far it got: memory when giving up (a start-up timeout) is still worth knowing.
      results.memoryAtFailure = {
        rssMiB: mib(treeRssKiB(proc.pid)),
        peakRssMiB: mib(treeRssKiB(proc.pid, true)),
        processes: processTree(proc.pid).length,
        afterMs: Math.round(performance.now() - t0),
      };
    }
    log(`FAILED: ${results.error}`);
  } finally {
    client.close();
    results.logTail = (restarted ?? proc).tail(15);
    // A profile of every thread at a million record sets takes V8 longer to write than the usual grace.
    await proc.stop(values['cpu-prof'] ? 120_000 : undefined);
    await restarted?.stop(values['cpu-prof'] ? 120_000 : undefined);
    save();
  }
  log(`results: ${path.relative(process.cwd(), out)}`);
  if (values.keep) {
    keepTempDir(tmp);
    log(`kept ${tmp}`);
  } else {
    removeTempDir(tmp);
  }
  return results.error ? 1 : 0;
}

/** A start's figures before anything was measured. */
function emptyStart(): NonNullable<ScaleResults['start']> {
  return {
    firstResponseMs: null,
    firstCorrectAnswerMs: null,
    allProbesCorrectMs: null,
    readyzMs: null,
    cpu: {
      mainAtFirstAnswerS: null,
      mainAtProbesS: null,
      allAtProbesS: null,
      mainAtAllProbesS: null,
      allAtFirstAnswerS: null,
      allAtAllProbesS: null,
    },
  };
}

/**
 * Fills `start` while Zonekeeper (spawned at `t0`) loads: the first response, the first correct answer
 * of `probes[0]`, every probe correct on one client port and then on every port, /readyz, and the CPU
 * of its threads at those moments. Throws when it exits, outgrows `maxRssKiB` or takes longer than
 * `startTimeoutMs`; what was measured until then stays in `start`.
 */
async function measureStart(
  start: NonNullable<ScaleResults['start']>,
  o: {
    proc: ReturnType<typeof spawnPinned>;
    client: UdpClient;
    threads: ThreadCpuTracker;
    probes: readonly { name: string; answer: string }[];
    t0: number;
    dnsPort: number;
    httpPort: number;
    startTimeoutMs: number;
    maxRssKiB: number;
  },
): Promise<void> {
  const { proc, client, threads, probes, t0, dnsPort, httpPort, startTimeoutMs, maxRssKiB } = o;
  const readyz = pollReadyz(httpPort, t0, startTimeoutMs, () => proc.exited()).then((ms) => {
    start.readyzMs = ms;
  });
  const correct = new Set<number>();
  while (correct.size < probes.length) {
    if (proc.exited()) throw new Error('zonekeeper exited while loading');
    if (performance.now() - t0 > startTimeoutMs)
      throw new Error(`not all probes correct after ${startTimeoutMs} ms (--start-timeout)`);
    threads.sample();
    const rss = treeRssKiB(proc.pid);
    if (rss > maxRssKiB) throw new Error(`RSS ${mib(rss)} MiB exceeds --max-rss-gib while loading`);
    for (let i = 0; i < probes.length; i++) {
      if (correct.has(i)) continue;
      const p = probes[i]!;
      const got = await client.query(p.name, 'A', 200);
      const now = performance.now() - t0;
      if (got && start.firstResponseMs === null) start.firstResponseMs = Math.round(now);
      if (got?.rcode === 0 && got.answer.join() === p.answer) {
        correct.add(i);
        if (i === 0) {
          start.firstCorrectAnswerMs = Math.round(now);
          start.cpu!.mainAtFirstAnswerS = mainThreadCpuSeconds(proc.pid);
          start.cpu!.allAtFirstAnswerS = treeCpuSeconds(proc.pid);
          start.cpu!.threadsAtFirstAnswer = threads.byName();
        }
        if (correct.size === probes.length) {
          start.cpu!.mainAtProbesS = mainThreadCpuSeconds(proc.pid);
          start.cpu!.allAtProbesS = treeCpuSeconds(proc.pid);
        }
      }
    }
    if (correct.size < probes.length) await sleep(20);
  }
  // Every worker process, not just the one this client's source port reaches.
  for (const p of probes) {
    await waitForAnswer(
      dnsPort,
      { name: p.name, type: 'A', answer: [p.answer] },
      { timeoutMs: startTimeoutMs, alive: () => !proc.exited(), since: t0, intervalMs: 20 },
    );
  }
  start.allProbesCorrectMs = Math.round(performance.now() - t0);
  start.cpu!.mainAtAllProbesS = mainThreadCpuSeconds(proc.pid);
  start.cpu!.allAtAllProbesS = treeCpuSeconds(proc.pid);
  start.cpu!.threadsAtAllProbes = threads.byName();
  await readyz;
  log(
    `first response ${start.firstResponseMs} ms, first correct answer ${start.firstCorrectAnswerMs} ms, ` +
      `all probes ${start.allProbesCorrectMs} ms, /readyz ${start.readyzMs} ms; main thread CPU ` +
      `${start.cpu!.mainAtFirstAnswerS} s / ${start.cpu!.mainAtProbesS} s / ${start.cpu!.mainAtAllProbesS} s, all threads ` +
      `${start.cpu!.allAtFirstAnswerS} s / ${start.cpu!.allAtAllProbesS} s`,
  );
  log(`threads' CPU at the first answer: ${threadSummary(start.cpu!.threadsAtFirstAnswer)}`);
  log(`threads' CPU when every probe answered: ${threadSummary(start.cpu!.threadsAtAllProbes)}`);
}

/** Index of the first A record set (with its own owner, not a wildcard) at or after `from`. */
function firstA(zone: GenZone, from: number): number {
  for (let i = from; i < zone.records.length; i++) {
    const r = zone.records[i]!;
    if (r.type === 'A' && !r.name.startsWith('*')) return i;
  }
  throw new Error(`zone ${zone.origin} has no A record after ${from}`);
}

function probeOf(zone: GenZone, rec: GenRecord): { name: string; answer: string } {
  const name = `${rec.name}.${zone.origin}`;
  return { name, answer: `${name} 300 in a ${rec.rdata}`.toLowerCase() };
}

async function pollReadyz(
  port: number,
  t0: number,
  timeoutMs: number,
  exited: () => boolean,
): Promise<number | null> {
  while (performance.now() - t0 < timeoutMs && !exited()) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return Math.round(performance.now() - t0);
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  return null;
}

/** RSS of each process, and with `heapDir` each process's heap after a garbage collection. */
async function perProcessMemory(root: number, heapDir: string | undefined): Promise<ProcessMemory[]> {
  const pids = processTree(root);
  const out: ProcessMemory[] = pids.map((pid) => ({
    pid,
    role: pid === root ? 'primary' : 'dns-worker',
    rssMiB: mib(statusField(pid, 'VmRSS')),
  }));
  if (!heapDir) return out;
  for (const pid of pids) {
    // A report from an earlier call is not this one's (the process's, and each DNS thread's).
    rmSync(path.join(heapDir, `heap-${pid}.json`), { force: true });
    for (const name of readdirSync(heapDir).filter((f) => f.startsWith(`heap-${pid}-t`)))
      rmSync(path.join(heapDir, name), { force: true });
    try {
      process.kill(pid, 'SIGUSR2');
    } catch {
      // gone
    }
  }
  const deadline = performance.now() + 30_000;
  for (const p of out) {
    const file = path.join(heapDir, `heap-${p.pid}.json`);
    while (!existsSync(file) && performance.now() < deadline) await sleep(100);
    if (!existsSync(file)) continue;
    await sleep(50);
    const h = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    Object.assign(p, heapFigures(h), { role: String(h.role) });
  }
  // DNS threads (serve --workers N): one file per thread, its own heap; the RSS is the process's.
  await sleep(2000);
  for (const pid of pids) {
    for (const name of readdirSync(heapDir)
      .filter((f) => f.startsWith(`heap-${pid}-t`))
      .sort()) {
      const h = JSON.parse(readFileSync(path.join(heapDir, name), 'utf8')) as Record<string, number | string>;
      out.push({ pid, role: `${h.role} ${h.threadId}`, ...heapFigures(h) });
    }
  }
  return out;
}

/** A heap probe's figures (bench/lib/heap-probe.ts, bytes) in MiB to one decimal. */
function heapFigures(h: Record<string, unknown>): Omit<ProcessMemory, 'pid' | 'role'> {
  const m = (b: unknown) => Math.round((Number(b) / 2 ** 20) * 10) / 10;
  return {
    rssMiB: m(h.rss),
    heapUsedMiB: m(h.heapUsed),
    heapTotalMiB: m(h.heapTotal),
    externalMiB: m(h.external),
    arrayBuffersMiB: m(h.arrayBuffers),
    heapLimitMiB: m(h.heapSizeLimit),
    ...(h.spaceSizes ? { spacesMiB: spaceFigures(h) } : {}),
  };
}

/** Used / committed MiB of each space a heap probe reported with a committed size of at least 1 MiB. */
function spaceFigures(h: Record<string, unknown>): Record<string, string> {
  const used = (h.spaces ?? {}) as Record<string, number>;
  const size = h.spaceSizes as Record<string, number>;
  const m = (b: number | undefined) => (Number(b ?? 0) / 2 ** 20).toFixed(1);
  return Object.fromEntries(
    Object.entries(size)
      .filter(([, bytes]) => bytes >= 2 ** 20)
      .map(([space, bytes]) => [space, `${m(used[space])} / ${m(bytes)}`]),
  );
}

function mib(kib: number): number {
  return Math.round((kib / 1024) * 10) / 10;
}

function int(text: string, flag: string, zeroOk = false): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) throw new Error(`--${flag} must be a positive integer`);
  return n;
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n\n${USAGE}`);
    process.exit(1);
  },
);

/** `name ×threads seconds` per thread name, the busiest first. */
function threadSummary(byName: Record<string, { seconds: number; threads: number }> | undefined): string {
  if (!byName) return 'n/a';
  return Object.entries(byName)
    .sort((a, b) => b[1].seconds - a[1].seconds)
    .map(([name, t]) => `${name}${t.threads > 1 ? ` ×${t.threads}` : ''} ${t.seconds.toFixed(2)} s`)
    .join(', ');
}
