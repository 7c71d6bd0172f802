import { readFile, stat } from 'node:fs/promises';
import { type FrontDoors, frontDoorId, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../api/index.ts';
import { KINDS, type Resource } from '../api/index.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { type ManifestDocument, parseManifestText } from '../sources/manifests/load-manifests.ts';
import type { ManifestParser } from '../sources/manifests/manifest-parser.ts';
import {
  formatProblem,
  type ManifestProblem,
  ManifestSource,
  refusalText,
} from '../sources/manifests/manifest-source.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { restoreAcceptance } from '../sources/manifests/zone-acceptance.ts';
import { assembleZone } from '../zones/assemble.ts';
import { Catalog } from '../zones/catalog.ts';
import { longTxtStrings } from '../zones/record-parse.ts';
import { resourceKey } from '../zones/resource-key.ts';
import { zoneAssemblyInput } from '../zones/zone-inputs.ts';
import { printable } from './printable.ts';

export interface ValidationReport {
  errors: ManifestProblem[];
  /** References that cannot be checked from these files alone (a zone or class defined elsewhere). */
  warnings: ManifestProblem[];
  /** What is worth knowing but not wrong: versions `serve` keeps, TXT strings it splits. */
  notes: ManifestProblem[];
  resources: number;
  /**
   * The resources judged, as serve's controller sees them (DNSZoneClasses, DNSZones, DNSRecordSets;
   * front-door objects as the native resources they map to), statuses restored from the state folder.
   */
  judged: Resource[];
}

export interface ValidateOptions {
  /**
   * The state folder of the `serve` that reads these manifests: objects are judged against what it
   * accepted (immutable fields, last valid versions kept), with its creation times.
   */
  stateDir?: string;
  /** Per-file size limit, as `serve --max-manifest-bytes`. */
  maxManifestBytes?: number;
  /** Front doors whose kinds the manifests may hold, checked with their own rules and mapped as serve maps them. */
  frontDoors?: FrontDoors;
  /**
   * Objects already there before the manifests are read (e.g. a cluster's, for `plan --kubeconfig`,
   * or record sets written through the API in folder mode), with their creation times, generations
   * and statuses. A manifest object of the same kind and key replaces one of them as an update does:
   * it keeps the creation time and status, the generation goes up when the spec differs, and the
   * transition rules (immutable fields) are checked against it.
   */
  base?: readonly Resource[];
  now?: Date;
  /** How files are read and parsed (default: on this thread, as `serve` with no parse threads; tests give their own). */
  parser?: ManifestParser;
}

/**
 * Checks manifests the way `serve` takes them — through the same manifest source: the schema and
 * rules of each resource, every record value, and with `stateDir` what `serve` accepted before
 * (immutable fields, last valid versions it keeps serving) — and then the whole set together: zone
 * ownership, conflicts, delegations.
 */
export async function validatePaths(
  paths: readonly string[],
  options: ValidateOptions = {},
): Promise<ValidationReport> {
  if (options.stateDir !== undefined && paths.length !== 1)
    throw new Error('--state-dir goes with exactly one PATH: the folder `serve --manifests` reads');
  if (options.stateDir !== undefined) {
    const info = await stat(options.stateDir).catch((e: Error) => e);
    if (info instanceof Error || !info.isDirectory())
      throw new Error(
        `--state-dir ${options.stateDir}: ${info instanceof Error ? info.message : 'not a folder'}; give the --state-dir of the serve that reads these manifests`,
      );
  }
  const now = options.now ?? new Date();
  // Read-only: a `serve` may be running on this state folder.
  const state = await StateStore.open(options.stateDir, { readOnly: true });
  const store = new MemoryStore(() => now);
  for (const r of options.base ?? []) {
    store.apply(r, r.metadata.creationTimestamp, r.metadata.generation);
    if (r.status !== undefined) await store.updateStatus(r.kind, resourceKey(r.metadata), r.status);
  }
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  const source = new ManifestSource({
    frontDoors,
    dir: paths.length === 1 ? paths[0]! : process.cwd(),
    roots: paths,
    store,
    state,
    now: () => now,
    // One read, nothing to wait for: a file caught mid-write is read as it is.
    settleMs: 0,
    ...(options.maxManifestBytes !== undefined ? { maxFileBytes: options.maxManifestBytes } : {}),
    ...(options.parser !== undefined ? { parser: options.parser } : {}),
    // A reload that fails is logged by `serve` and tried again; here it is the answer: no report.
    log: (level, message) => {
      if (level === 'error') failures.push(message);
    },
  });
  const failures: string[] = [];
  await source.reload();
  if (failures.length > 0) throw new Error(failures.join('; '));
  const errors: ManifestProblem[] = source.problems().filter((p) => p.code !== 'KEPT_PREVIOUS');
  const warnings: ManifestProblem[] = [];
  const notes: ManifestProblem[] = [];

  // Lines of fields, for problems found on the whole set: each file concerned parsed once more.
  const parsedFiles = new Map<string, Promise<Map<number, ManifestDocument>>>();
  const documentsOf = (file: string) => {
    let parsed = parsedFiles.get(file);
    if (!parsed) {
      parsed = readFile(file, 'utf8').then(
        (text) => new Map(parseManifestText(text, file).documents.map((d) => [d.document, d])),
        () => new Map(),
      );
      parsedFiles.set(file, parsed);
    }
    return parsed;
  };
  const located: Promise<void>[] = [];
  // Front-door objects are judged as the DNSZones and DNSRecordSets they map to, and reported as themselves.
  const translated = frontDoors.size > 0 ? new FrontDoorStore({ base: store, doors: frontDoors }) : undefined;
  const report = (list: ManifestProblem[], r: Resource, code: string, message: string, path?: string) => {
    const origin = translated?.origin(r.kind, resourceKey(r.metadata));
    if (origin) {
      for (const object of origin.objects) {
        const id = `${frontDoorId(origin.door)}/${resourceKey(object.metadata)}`;
        place(
          list,
          id,
          `${origin.door.kind} ${resourceKey(object.metadata)}`,
          code,
          `${message} (as ${r.kind} ${resourceKey(r.metadata)})`,
        );
      }
      return;
    }
    place(
      list,
      `${r.kind}/${resourceKey(r.metadata)}`,
      `${r.kind} ${resourceKey(r.metadata)}`,
      code,
      message,
      path,
    );
  };
  const place = (
    list: ManifestProblem[],
    id: string,
    object: string,
    code: string,
    message: string,
    path?: string,
  ) => {
    const where = source.definitionOf(id);
    const problem: ManifestProblem = {
      file: where?.file ?? paths.join(', '),
      ...(where?.document !== undefined ? { document: where.document } : {}),
      object,
      ...(path ? { path } : {}),
      code,
      message,
    };
    list.push(problem);
    if (where?.document !== undefined) {
      const document = where.document;
      located.push(
        documentsOf(where.file).then((docs) => {
          const doc = docs.get(document);
          if (doc) problem.line = (path ? doc.lineOf(path) : undefined) ?? doc.line;
        }),
      );
    }
  };

  // Versions serve keeps serving while their manifest is invalid (known from the state folder).
  for (const [id, why] of source.keptObjects()) {
    const slash = id.indexOf('/');
    const object = `${id.slice(0, slash)} ${id.slice(slash + 1)}`;
    const first = why[0];
    notes.push({
      file: source.definitionOf(id)?.file ?? first?.file ?? paths.join(', '),
      object,
      code: 'KEPT',
      message: `serve keeps the last valid version it accepted (remembered in ${options.stateDir}) until the manifest is fixed${first ? `: ${first.message}` : ''}`,
    });
  }

  // A translation the native rules refuse (e.g. a merged CNAME with two targets).
  for (const t of translated?.translationProblems() ?? []) {
    for (const object of t.objects) {
      for (const p of t.problems) {
        const key = resourceKey(object.metadata);
        place(
          errors,
          `${frontDoorId(t.door)}/${key}`,
          `${t.door.kind} ${key}`,
          p.code,
          `as ${p.path}: ${p.message}`,
        );
      }
    }
  }
  // Objects their door maps onto nothing (e.g. a kubizone Record no Zone's delegations admit): a
  // warning with the door's own reason, since the API allows them to wait (kubizone's examples do).
  for (const u of translated?.unmapped() ?? []) {
    const conditions = (u.status.conditions ?? []) as {
      type?: string;
      status?: string;
      reason?: string;
      message?: string;
    }[];
    const why = conditions.find((c) => c.status === 'False' && c.reason !== 'Pending');
    if (!why) continue;
    // Accepted but not as its API says (a Datum DNSZoneClass whose name servers are not the ones served).
    const accepted = conditions.some((c) => c.type === 'Accepted' && c.status === 'True');
    const key = resourceKey(u.object.metadata);
    place(
      warnings,
      `${frontDoorId(u.door)}/${key}`,
      `${u.door.kind} ${key}`,
      why.reason ?? 'NotServed',
      `${accepted ? '' : 'not served: '}${why.message ?? ''}`,
    );
  }
  // The zones judged as `serve` judges them at start: in one batch (zones created at the same time
  // tie), with the Accepted conditions serve remembers (a zone it served keeps its domain, ADR 0013).
  await restoreAcceptance(store, state);
  const catalog = new Catalog();
  const view = translated ?? store;
  catalog.load(view.list('DNSZoneClass') as DNSZoneClass[], view.list('DNSZone') as DNSZone[], []);
  // Zones whose manifest is invalid (and nothing kept): record sets naming them say so, not that
  // they do not exist.
  for (const [id, why] of source.refusedObjects())
    if (id.startsWith('DNSZone/')) catalog.setZoneRefused(id.slice('DNSZone/'.length), refusalText(why));
  for (const r of view.list('DNSRecordSet')) catalog.setRecord(r as DNSRecordSet);

  for (const [key, zone] of catalog.zones) {
    const verdict = catalog.zoneVerdict(key);
    if (verdict && !verdict.accepted) {
      const external = verdict.reason === 'ClassNotFound';
      report(
        external ? warnings : errors,
        zone,
        verdict.reason,
        verdict.message,
        external ? 'spec.className' : 'spec.domainName',
      );
      continue;
    }
    const input = zoneAssemblyInput(catalog, key);
    if (!input) continue;
    for (const [recordKey, v] of assembleZone(input).verdicts) {
      if (v.accepted) continue;
      const rs = catalog.records.get(recordKey)!;
      // A record value at its entry; every other rule is about where the record set is: its name.
      const index = /^spec\.records\[(\d+)\]/.exec(v.message);
      report(errors, rs, v.reason, v.message, index ? `spec.records[${index[1]}]` : 'spec.name');
    }
  }
  for (const [key, rs] of catalog.records) {
    const resolution = catalog.recordResolution(key);
    if (!resolution || resolution.resolved) continue;
    const external = resolution.reason === 'ZoneNotFound';
    report(
      external ? warnings : errors,
      rs,
      resolution.reason,
      resolution.message,
      external ? undefined : 'spec.name',
    );
  }
  for (const rs of view.list('DNSRecordSet') as DNSRecordSet[]) {
    for (const long of longTxtStrings(rs)) {
      report(
        notes,
        rs,
        'TXT_SPLIT',
        `a TXT string of ${long.octets} octets is served as ${long.parts} strings of at most 255 octets (RFC 1035 §3.3); clients that join the strings (SPF, DKIM, DMARC do) see the text as written`,
        `spec.records[${long.index}]`,
      );
    }
  }
  await Promise.all(located);
  const judged = KINDS.flatMap((kind) => view.list(kind));
  translated?.close();

  const order = (a: ManifestProblem, b: ManifestProblem) =>
    a.file < b.file ? -1 : a.file > b.file ? 1 : (a.line ?? 0) - (b.line ?? 0);
  errors.sort(order);
  warnings.sort(order);
  notes.sort(order);
  const foreign = frontDoors.all.reduce((n, door) => n + store.listForeign(frontDoorId(door)).length, 0);
  const native = KINDS.reduce((n, kind) => n + store.list(kind).length, 0);
  return { errors, warnings, notes, resources: native + foreign, judged };
}

export async function runValidate(
  paths: readonly string[],
  out: NodeJS.WritableStream,
  options: ValidateOptions = {},
): Promise<number> {
  let report: ValidationReport;
  try {
    report = await validatePaths(paths, options);
  } catch (e) {
    // Not about the manifests (e.g. a --state-dir that is not there): say so, exit 2 like a usage error.
    out.write(`error: ${printable((e as Error).message)}\n`);
    return 2;
  }
  // Names, values and file names come from the manifests: escaped, never acted on by the terminal.
  for (const p of report.errors) out.write(`error: ${printable(formatProblem(p))}\n`);
  for (const p of report.warnings) out.write(`warning: ${printable(formatProblem(p))}\n`);
  for (const p of report.notes) out.write(`note: ${printable(formatProblem(p))}\n`);
  out.write(
    `${report.resources} valid resource(s), ${report.errors.length} error(s), ${report.warnings.length} warning(s)${report.notes.length > 0 ? `, ${report.notes.length} note(s)` : ''}\n`,
  );
  return report.errors.length === 0 ? 0 : 1;
}
