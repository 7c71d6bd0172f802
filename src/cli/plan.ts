import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { ForeignObject } from '../api/frontdoors/front-door.ts';
import { type FrontDoors, NO_FRONT_DOORS } from '../api/frontdoors/index.ts';
import { CONFIRM_CHANGE_ANNOTATION, type DNSZone, KINDS, type Kind, type Resource } from '../api/index.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import type { Backend, LiveDiff, LiveRRset } from '../backends/backend.ts';
import { createBackendFactory } from '../backends/registry.ts';
import { FrontDoorStore } from '../control/front-door-store.ts';
import { MemoryStore } from '../control/memory-store.ts';
import { fileAndEnvSecrets } from '../control/secrets.ts';
import { KubeApi, KubeApiError, loadKubeConfig } from '../sources/kubernetes/kube-api.ts';
import { kubernetesSecrets } from '../sources/kubernetes/secrets.ts';
import { readConfirmations } from '../sources/manifests/confirmations.ts';
import { formatProblem, type ManifestProblem } from '../sources/manifests/manifest-source.ts';
import { StateStore } from '../sources/manifests/state-file.ts';
import { restoreAcceptance } from '../sources/manifests/zone-acceptance.ts';
import { WRITES_DIR } from '../sources/writes/folder-write-store.ts';
import { planHold } from '../zones/change-safety.ts';
import { type ComputedZone, computeZones } from '../zones/compute-zones.ts';
import { resourceKey } from '../zones/resource-key.ts';
import type { ZoneSerialState } from '../zones/serial.ts';
import { knownSerial } from '../zones/serial-policy.ts';
import { type PlannedRRset, pairZones, planChanges, planZone, type ZonePlan } from '../zones/zone-plan.ts';
import { printable } from './printable.ts';
import { validatePaths } from './validate.ts';

export interface PlanOptions {
  manifests: string;
  /** Folder mode: the state folder of the `serve` reading `manifests` (what it serves now). */
  stateDir?: string;
  /** Cluster mode: the manifests are overlaid on the cluster's objects and diffed against them. */
  kubeconfig?: string;
  context?: string;
  output?: 'text' | 'json';
  maxManifestBytes?: number;
  frontDoors?: FrontDoors;
  now?: Date;
  /**
   * Also read each zone's content from its class's external backend (PowerDNS, an RFC 2136 primary,
   * a homelab webhook provider) and show what an apply would change there (`LivePlan`).
   */
  live?: boolean;
  /** Cluster mode with `live`: where a Secret reference without a namespace is looked up. */
  operatorNamespace?: string;
  /** Reads the backends' secrets (tests); default: files and environment variables, and Secrets with --kubeconfig. */
  secrets?: SecretResolver;
}

/**
 * A zone's content as its class's external backend holds it, against the zone computed from the
 * manifests (`plan --live`): the diff, the read's error, or why it cannot be read.
 */
export interface LivePlan {
  /** The backend's name and where it is (`PowerDNS at URL (server ID)`). */
  backend: string;
  diff?: LiveDiff;
  error?: { code?: string; message: string };
  /** Set when the backend has no way to read a zone back. */
  unreadable?: string;
}

/** A zone's plan, with its live backend's when `--live` was given and its class has an external one. */
export interface PlannedZone extends ZonePlan {
  live?: LivePlan;
}

/** Version of the JSON document `plan --output json` prints (docs/change-safety.md). */
export const PLAN_JSON_VERSION = 1;

/** Exit codes, as `terraform plan -detailed-exitcode`. */
export const PLAN_EXIT = { unchanged: 0, error: 1, changes: 2 } as const;

export interface PlanResult {
  mode: 'folder' | 'cluster';
  /** Whether the external backends were read (`--live`). */
  live?: boolean;
  zones: PlannedZone[];
  /** Problems that keep a resource from being accepted (it is refused, or keeps a former version). */
  errors: ManifestProblem[];
  /** What cannot be judged from these resources alone (a zone or class defined elsewhere). */
  warnings: ManifestProblem[];
}

/**
 * What `zonekeeper serve` (folder mode) or the operator (cluster mode) would change if the manifests
 * in `options.manifests` were applied: for every zone the RRsets added, changed and deleted and the
 * serial before → after, and every problem that would keep a resource from being accepted, judged as
 * `validate` judges them. Reads only: nothing is written, no server needs to run.
 *
 * What is served now: in folder mode the versions the state folder remembers as accepted (with the
 * record sets written through the API), at the serials it stores; without a state folder nothing.
 * In cluster mode the cluster's objects, at the serials their DNSZone statuses record.
 */
export async function planManifests(options: PlanOptions): Promise<PlanResult> {
  const now = options.now ?? new Date();
  const info = await stat(options.manifests).catch((e: Error) => e);
  if (info instanceof Error || !info.isDirectory())
    throw new Error(
      `--manifests ${options.manifests}: ${info instanceof Error ? info.message : 'not a folder'}`,
    );
  return options.kubeconfig !== undefined ? planCluster(options, now) : planFolder(options, now);
}

async function planFolder(options: PlanOptions, now: Date): Promise<PlanResult> {
  const frontDoors = options.frontDoors ?? NO_FRONT_DOORS;
  let state: StateStore | undefined;
  let written: Resource[] = [];
  if (options.stateDir !== undefined) {
    const info = await stat(options.stateDir).catch((e: Error) => e);
    if (info instanceof Error || !info.isDirectory())
      throw new Error(
        `--state-dir ${options.stateDir}: ${info instanceof Error ? info.message : 'not a folder'}; give the --state-dir of the serve that reads these manifests`,
      );
    // Read-only: `serve` may be running on this state folder.
    state = await StateStore.open(options.stateDir, { readOnly: true });
    written = await apiWrittenRecordSets(options.stateDir);
  }
  const report = await validatePaths([options.manifests], {
    ...(options.stateDir !== undefined ? { stateDir: options.stateDir } : {}),
    ...(options.maxManifestBytes !== undefined ? { maxManifestBytes: options.maxManifestBytes } : {}),
    frontDoors,
    base: written,
    now,
  });
  const before = state ? [...(await rememberedResources(state, frontDoors, now)), ...written] : [];
  // `zonekeeper confirm` files: a change confirmed ahead of time is not held.
  const confirmed =
    options.stateDir !== undefined ? await readConfirmations(options.stateDir) : new Map<string, string>();
  const after = computeZones(report.judged);
  const zones = plan(
    computeZones(before),
    after,
    (origin) => state?.get(origin),
    () => undefined,
    now,
    (key) => {
      const hash = confirmed.get(key);
      return hash === undefined ? [] : [hash];
    },
  );
  if (options.live)
    return {
      mode: 'folder',
      live: true,
      zones: await readLive(zones, after, options.secrets ?? fileAndEnvSecrets()),
      errors: report.errors,
      warnings: report.warnings,
    };
  return { mode: 'folder', zones, errors: report.errors, warnings: report.warnings };
}

async function planCluster(options: PlanOptions, now: Date): Promise<PlanResult> {
  if (options.stateDir !== undefined)
    throw new Error('--state-dir is for folder mode; leave it out with --kubeconfig');
  const api = new KubeApi(loadKubeConfig(options.kubeconfig, options.context));
  // Objects of front doors whose kinds become zones and record sets are not planned from a cluster
  // yet: plan says so when the cluster holds any (a kind whose CRD is not installed holds none).
  // External doors (the homelab DNS operator's kinds, pushed to their own providers) change no zone.
  for (const door of options.frontDoors?.all ?? []) {
    if (door.external) continue;
    let count = 0;
    try {
      const coordinates = { group: door.group, version: door.version, plural: door.plural, kind: door.kind };
      count = (await api.listerWatcher(coordinates).list()).items.length;
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
    }
    if (count > 0)
      throw new Error(
        `the cluster holds ${count} ${door.kind} (${door.group}) objects, which plan does not read from a cluster yet; plan the folder without --kubeconfig`,
      );
  }
  const cluster: Resource[] = [];
  for (const kind of KINDS) {
    const { items } = await api.listerWatcher(kind).list();
    for (const item of items) cluster.push(fromCluster(kind, item as unknown as Resource));
  }
  const report = await validatePaths([options.manifests], {
    ...(options.maxManifestBytes !== undefined ? { maxManifestBytes: options.maxManifestBytes } : {}),
    base: cluster,
    now,
  });
  const zoneByKey = new Map<string, DNSZone>();
  for (const r of cluster) if (r.kind === 'DNSZone') zoneByKey.set(resourceKey(r.metadata), r);
  const statusOf = (key: string) => {
    const s = zoneByKey.get(key)?.status;
    return s ? { serial: s.serial, hash: s.hash } : undefined;
  };
  const after = computeZones(report.judged);
  const zones = plan(
    computeZones(cluster),
    after,
    () => undefined,
    statusOf,
    now,
    () => [],
  );
  if (options.live)
    return {
      mode: 'cluster',
      live: true,
      zones: await readLive(
        zones,
        after,
        options.secrets ?? kubernetesSecrets(api, options.operatorNamespace ?? 'zonekeeper-system'),
      ),
      errors: report.errors,
      warnings: report.warnings,
    };
  return { mode: 'cluster', zones, errors: report.errors, warnings: report.warnings };
}

/**
 * The zone plans: each origin served now or after, the serial it is served at now (the stored one,
 * else the one its DNSZone's status records) and the known serial the next one is chosen above.
 *
 * Holds on large changes: each zone's change is judged by `planHold`, the measure, hash and decision
 * the controller applies, with what is served now as the baseline, so the plan says which zones would
 * be held rather than applied and the hash that confirms the change. `confirmations` are those given
 * outside the zone's manifest (`zonekeeper confirm` files).
 */
function plan(
  before: readonly ComputedZone[],
  after: readonly ComputedZone[],
  stored: (origin: string) => ZoneSerialState | undefined,
  status: (key: string) => { serial?: number | undefined; hash?: string | undefined } | undefined,
  now: Date,
  confirmations: (key: string) => readonly string[],
): ZonePlan[] {
  return pairZones(before, after).map((pair) => {
    const recorded = pair.before ? status(pair.before.key) : undefined;
    const known = knownSerial(stored(pair.origin), recorded);
    const hold = planHold(pair.before, pair.after, pair.after ? confirmations(pair.after.key) : []);
    const zonePlan = planZone(
      {
        origin: pair.origin,
        ...(pair.before
          ? { before: { key: pair.before.key, zone: pair.before.zone, serial: known?.serial } }
          : {}),
        ...(pair.after ? { after: { key: pair.after.key, zone: pair.after.zone } } : {}),
        known,
      },
      now,
    );
    return hold && zonePlan.action === 'update' ? { ...zonePlan, hold } : zonePlan;
  });
}

/** What the built-in server stands for here: plan reads it from the state folder or the cluster. */
const NOT_EXTERNAL: Backend = {
  name: 'builtin',
  capabilities: {
    serial: 'authority',
    transfers: true,
    alias: true,
    steering: false,
    dnssec: false,
    driftRepair: false,
  },
  applyZone: () => Promise.reject(new Error('plan changes nothing')),
  deleteZone: () => Promise.reject(new Error('plan changes nothing')),
  servedSerial: () => Promise.resolve(undefined),
};

/**
 * `--live`: for each zone served after the change whose class has an external backend (one others
 * can edit: `capabilities.driftRepair`), the backend's own `liveDiff` of the computed zone at the
 * serial the plan gives it against what the backend holds now. The backends are made by the same
 * registrations `serve` and the operator use; each kind reads its target its own way. Zones read one
 * at a time; a backend that cannot be reached is that zone's error, the others are still read.
 */
async function readLive(
  zones: ZonePlan[],
  after: readonly ComputedZone[],
  secrets: SecretResolver,
): Promise<PlannedZone[]> {
  const factory = createBackendFactory({ builtin: NOT_EXTERNAL, secrets });
  const byKey = new Map(after.map((z) => [z.key, z]));
  const out: PlannedZone[] = [];
  try {
    for (const z of zones) {
      const computed = z.action === 'delete' ? undefined : byKey.get(z.zone);
      if (!computed || z.serial.after === undefined) {
        out.push(z);
        continue;
      }
      const backend = factory(computed.zoneClass);
      if (!backend.capabilities.driftRepair) {
        out.push(z);
        continue;
      }
      const name = backend.location ?? backend.name;
      if (backend.liveDiff === undefined) {
        out.push({
          ...z,
          live: { backend: name, unreadable: `the ${backend.name} backend cannot read a zone back` },
        });
        continue;
      }
      const zone = computed.zone;
      try {
        const diff = await backend.liveDiff({
          key: computed.key,
          origin: zone.origin,
          soa: zone.soa,
          serial: z.serial.after,
          rrsets: () => zone.rrsets,
          ...(computed.resource.spec.ignore ? { ignore: computed.resource.spec.ignore } : {}),
        });
        out.push({ ...z, live: { backend: name, diff } });
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        out.push({
          ...z,
          live: {
            backend: name,
            error: { ...(typeof code === 'string' ? { code } : {}), message: (e as Error).message },
          },
        });
      }
    }
  } finally {
    factory.close();
  }
  return out;
}

/** A cluster object as the store keeps it (what the API server adds for itself left out). */
function fromCluster(kind: Kind, item: Resource): Resource {
  const { managedFields: _m, ...metadata } = item.metadata as Resource['metadata'] & {
    managedFields?: unknown;
  };
  return { ...item, kind, metadata } as Resource;
}

/**
 * What `serve` accepted, as the state folder remembers it: the last valid version of every object
 * (front-door objects as the native resources they map to), with creation times and the DNSZones'
 * Accepted conditions, judged as serve judges them when it starts.
 */
async function rememberedResources(
  state: StateStore,
  frontDoors: FrontDoors,
  now: Date,
): Promise<Resource[]> {
  const store = new MemoryStore(() => now);
  for (const id of state.objectIds()) {
    const object = state.object(id);
    if (!object?.resource) continue;
    const kind = id.slice(0, id.indexOf('/'));
    if ((KINDS as readonly string[]).includes(kind)) {
      store.apply(object.resource, object.created, object.generation);
    } else if (frontDoors.get(kind)) {
      store.applyForeign(
        kind,
        object.resource as unknown as ForeignObject,
        object.created,
        object.generation,
      );
    }
  }
  await restoreAcceptance(store, state);
  if (frontDoors.size === 0) return KINDS.flatMap((kind) => store.list(kind));
  const view = new FrontDoorStore({ base: store, doors: frontDoors });
  try {
    return KINDS.flatMap((kind) => view.list(kind));
  } finally {
    view.close();
  }
}

/** Record sets written through the API (`--state-dir/api-writes`): served beside the manifests. */
async function apiWrittenRecordSets(stateDir: string): Promise<Resource[]> {
  const dir = path.join(stateDir, WRITES_DIR);
  if (
    !(await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    return [];
  const writes = await StateStore.open(dir, { readOnly: true });
  const out: Resource[] = [];
  for (const id of writes.objectIds()) {
    const o = writes.object(id);
    if (id.startsWith('DNSRecordSet/') && o?.resource?.kind === 'DNSRecordSet')
      out.push({ ...o.resource, metadata: { ...o.resource.metadata, creationTimestamp: o.created } });
  }
  return out;
}

// --- output --------------------------------------------------------------------------------------

/** The exit code of a plan: 1 when a resource would be refused, else 2 when anything would change. */
export function planExitCode(result: PlanResult): number {
  if (result.errors.length > 0 || result.zones.some((z) => z.live?.error)) return PLAN_EXIT.error;
  return planChanges(result.zones) || result.zones.some((z) => liveChanges(z.live))
    ? PLAN_EXIT.changes
    : PLAN_EXIT.unchanged;
}

/** Whether an apply would change anything in the backend (create the zone, or change RRsets). */
function liveChanges(live: LivePlan | undefined): boolean {
  const d = live?.diff;
  return d !== undefined && (!d.exists || d.add.length + d.change.length + d.delete.length > 0);
}

/** The plan as people read it: one block per zone, then the problems, then a summary line. */
export function planText(result: PlanResult): string {
  const lines: string[] = [];
  const serial = (n: number | undefined, none: string) => (n === undefined ? none : String(n));
  for (const z of result.zones) {
    const moved = z.previousZone ? `, from DNSZone ${z.previousZone}` : '';
    const serials =
      z.action === 'unchanged'
        ? `serial ${serial(z.serial.before, 'unknown')}`
        : `serial ${serial(z.serial.before, z.action === 'create' ? 'none' : 'unknown')} → ${serial(z.serial.after, 'none')}`;
    lines.push(`zone ${z.origin} (DNSZone ${z.zone}${moved}): ${actionText(z)}, ${serials}`);
    if (z.hold) lines.push(`  ! ${holdText(z, result.mode)}`);
    for (const r of z.add) for (const rec of r.records) lines.push(`  + ${recordLine(r, rec)}`);
    for (const c of z.change) {
      lines.push(
        `  ~ ${c.owner} ${c.type}${c.before.ttl !== c.after.ttl ? ` (TTL ${c.before.ttl} → ${c.after.ttl})` : ''}`,
      );
      const kept = new Set(c.after.records);
      const had = new Set(c.before.records);
      for (const rec of c.before.records)
        if (!kept.has(rec)) lines.push(`      - ${recordLine(c.before, rec)}`);
      for (const rec of c.after.records) if (!had.has(rec)) lines.push(`      + ${recordLine(c.after, rec)}`);
    }
    for (const r of z.delete) for (const rec of r.records) lines.push(`  - ${recordLine(r, rec)}`);
    if (z.live) lines.push(...liveText(z.live));
  }
  // Names, values and file names come from the manifests: escaped, never acted on by the terminal.
  for (const p of result.errors) lines.push(`error: ${formatProblem(p)}`);
  for (const p of result.warnings) lines.push(`warning: ${formatProblem(p)}`);
  const count = (a: ZonePlan['action']) => result.zones.filter((z) => z.action === a).length;
  const sum = (f: (z: ZonePlan) => number) => result.zones.reduce((n, z) => n + f(z), 0);
  const held = result.zones.filter((z) => z.hold?.held).length;
  lines.push(
    `Plan: ${count('create')} zone(s) to create, ${count('update')} to update, ${count('delete')} to delete, ` +
      `${count('unchanged')} unchanged; ${sum((z) => z.add.length)} RRset(s) to add, ` +
      `${sum((z) => z.change.length)} to change, ${sum((z) => z.delete.length)} to delete; ` +
      `${result.errors.length} error(s), ${result.warnings.length} warning(s)` +
      (held > 0 ? `; ${held} zone(s) would be held for confirmation` : '') +
      '.',
  );
  if (result.live) {
    const diffs = result.zones.flatMap((z) => (z.live?.diff ? [z.live.diff] : []));
    const n = (f: (d: LiveDiff) => number) => diffs.reduce((a, d) => a + f(d), 0);
    lines.push(
      `Live backends: ${diffs.length} zone(s) read, ${result.zones.filter((z) => z.live?.error).length} could not be read; ` +
        `${n((d) => d.add.length)} RRset(s) to add, ${n((d) => d.change.length)} to change, ` +
        `${n((d) => d.delete.length)} to delete there; ${n((d) => d.notOwned.length)} not owned and ` +
        `${n((d) => d.ignored.length)} ignored, left alone.`,
    );
  }
  if (result.errors.length > 0)
    lines.push('Resources with errors are refused (or keep the version served now); fix them first.');
  return `${lines.map(printable).join('\n')}\n`;
}

/** A zone's live backend: what an apply would change there, and what it leaves alone. */
function liveText(live: LivePlan): string[] {
  if (live.error)
    return [
      `  live ${live.backend}: error${live.error.code ? ` ${live.error.code}` : ''}: ${live.error.message}`,
    ];
  if (live.unreadable) return [`  live ${live.backend}: cannot be read: ${live.unreadable}`];
  const d = live.diff!;
  const lines = [
    `  live ${live.backend}: ${d.exists ? '' : 'zone to create, '}${d.add.length} to add, ${d.change.length} to change, ` +
      `${d.delete.length} to delete; ${d.notOwned.length} not owned, ${d.ignored.length} ignored`,
  ];
  const line = (r: LiveRRset, rec: string) => `${r.owner} ${r.ttl} ${r.type} ${rec}`;
  for (const r of d.add) for (const rec of r.records) lines.push(`    + ${line(r, rec)}`);
  for (const c of d.change) {
    lines.push(
      `    ~ ${c.owner} ${c.type}${c.before.ttl !== c.after.ttl ? ` (TTL ${c.before.ttl} → ${c.after.ttl})` : ''}`,
    );
    const kept = new Set(c.after.records);
    const had = new Set(c.before.records);
    for (const rec of c.before.records) if (!kept.has(rec)) lines.push(`        - ${line(c.before, rec)}`);
    for (const rec of c.after.records) if (!had.has(rec)) lines.push(`        + ${line(c.after, rec)}`);
  }
  for (const r of d.delete) for (const rec of r.records) lines.push(`    - ${line(r, rec)}`);
  for (const r of d.notOwned)
    for (const rec of r.records) lines.push(`    = ${line(r, rec)} (not Zonekeeper's: left alone)`);
  for (const r of d.ignored)
    for (const rec of r.records) lines.push(`    = ${line(r, rec)} (matches spec.ignore: left alone)`);
  for (const p of d.problems)
    lines.push(`    ! ${p.owner} ${p.type} not programmed (${p.reason}): ${p.message}`);
  for (const note of d.notes ?? []) lines.push(`    note: ${note}`);
  return lines;
}

/** The line saying that a zone's change is over its limits: held until confirmed, or confirmed. */
function holdText(z: ZonePlan, mode: PlanResult['mode']): string {
  const h = z.hold!;
  const what =
    `change ${h.hash} deletes ${h.counts.deleted} and changes ${h.counts.updated} of the zone's ` +
    `${h.counts.total} RRsets (limits ${h.settings.maxDeletePercent}% and ${h.settings.maxUpdatePercent}%)`;
  if (!h.held) return `${what}: confirmed, it would apply`;
  const how =
    mode === 'cluster'
      ? `the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${h.hash}" on the DNSZone`
      : `zonekeeper confirm --state-dir DIR ${z.zone} ${h.hash}, or the annotation ${CONFIRM_CHANGE_ANNOTATION}: "${h.hash}" in its manifest`;
  return `would be held: ${what}; the zone would keep serving its current content until this change is confirmed with ${how}`;
}

function actionText(z: ZonePlan): string {
  switch (z.action) {
    case 'create':
      return 'to create';
    case 'delete':
      return 'to delete';
    case 'update':
      return 'to update';
    case 'unchanged':
      return 'no changes';
  }
}

function recordLine(r: PlannedRRset, record: string): string {
  return `${r.owner} ${r.ttl} ${r.type} ${record}`;
}

/** The plan as JSON for CI (shape in docs/change-safety.md). */
export function planJson(result: PlanResult): string {
  const rrset = (r: PlannedRRset) => ({ owner: r.owner, type: r.type, ttl: r.ttl, records: r.records });
  const problem = (severity: 'error' | 'warning') => (p: ManifestProblem) => ({
    severity,
    file: p.file,
    ...(p.line !== undefined ? { line: p.line } : {}),
    ...(p.document !== undefined ? { document: p.document } : {}),
    ...(p.object !== undefined ? { object: p.object } : {}),
    ...(p.path !== undefined ? { path: p.path } : {}),
    code: p.code,
    message: p.message,
  });
  const doc = {
    version: PLAN_JSON_VERSION,
    mode: result.mode,
    ...(result.live ? { live: true } : {}),
    changes: planChanges(result.zones),
    exitCode: planExitCode(result),
    zones: result.zones.map((z) => ({
      origin: z.origin,
      zone: z.zone,
      ...(z.previousZone ? { previousZone: z.previousZone } : {}),
      action: z.action,
      serial: { before: z.serial.before ?? null, after: z.serial.after ?? null },
      rrsetCount: z.rrsetCount,
      add: z.add.map(rrset),
      change: z.change.map((c) => ({
        owner: c.owner,
        type: c.type,
        before: { ttl: c.before.ttl, records: c.before.records },
        after: { ttl: c.after.ttl, records: c.after.records },
      })),
      delete: z.delete.map(rrset),
      hold: z.hold
        ? {
            held: z.hold.held,
            hash: z.hold.hash,
            total: z.hold.counts.total,
            deleted: z.hold.counts.deleted,
            changed: z.hold.counts.updated,
            maxDeletePercent: z.hold.settings.maxDeletePercent,
            maxUpdatePercent: z.hold.settings.maxUpdatePercent,
          }
        : null,
      ...(result.live ? { live: z.live ? liveJson(z.live) : null } : {}),
    })),
    problems: [...result.errors.map(problem('error')), ...result.warnings.map(problem('warning'))],
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** A zone's live backend in the JSON document (docs/change-safety.md). */
function liveJson(live: LivePlan) {
  const rrset = (r: LiveRRset) => ({ owner: r.owner, type: r.type, ttl: r.ttl, records: r.records });
  const d = live.diff;
  return {
    backend: live.backend,
    error: live.error ? { code: live.error.code ?? null, message: live.error.message } : null,
    unreadable: live.unreadable ?? null,
    ...(d
      ? {
          exists: d.exists,
          add: d.add.map(rrset),
          change: d.change.map((c) => ({
            owner: c.owner,
            type: c.type,
            before: { ttl: c.before.ttl, records: c.before.records },
            after: { ttl: c.after.ttl, records: c.after.records },
          })),
          delete: d.delete.map(rrset),
          notOwned: d.notOwned.map(rrset),
          ignored: d.ignored.map(rrset),
          problems: d.problems.map((p) => ({
            owner: p.owner,
            type: p.type,
            reason: p.reason,
            message: p.message,
          })),
          notes: d.notes ?? [],
        }
      : {}),
  };
}

/** `zonekeeper plan`: prints the plan; exit 0 (no changes), 2 (changes) or 1 (error, or a refusal). */
export async function runPlan(
  options: PlanOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  let result: PlanResult;
  try {
    result = await planManifests(options);
  } catch (e) {
    err.write(`error: ${printable((e as Error).message)}\n`);
    return PLAN_EXIT.error;
  }
  out.write(options.output === 'json' ? planJson(result) : planText(result));
  return planExitCode(result);
}
