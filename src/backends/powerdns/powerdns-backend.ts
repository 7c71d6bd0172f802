/**
 * PowerDNS Authoritative as a backend, programmed through its HTTP API
 * (https://doc.powerdns.com/authoritative/http-api/zone.html).
 *
 * Every apply reads the zone back (GET with its RRsets, and the ownership metadata, in parallel),
 * computes the minimal change against it and sends it as one PATCH of REPLACE/DELETE changetypes —
 * so drift is repaired on every apply, and the controller re-applies every zone each `resyncSeconds`
 * to find drift when nothing changes. Zonekeeper writes the SOA itself (its serial is authoritative;
 * the zone's SOA-EDIT-API and SOA-EDIT are set empty so PowerDNS never rewrites it).
 *
 * Ownership: Zonekeeper touches only the apex SOA and NS and the RRsets listed in the zone metadata
 * `X-ZONEKEEPER-RRSETS`. RRset comments would be the natural marker, but the LMDB backend as Datum Cloud
 * deploys it refuses comments before 5.1 ("Hosting backend does not support editing comments") and
 * leaves them behind when an RRset or zone is deleted in 5.1 (PowerDNS issue #18051), which would make
 * a later hand-made RRset look like ours. Zone metadata works on every backend with the API.
 */

import type { DnssecStatus, PowerDnsSettings } from '../../api/index.ts';
import type { SecretResolver } from '../../api/secret-ref.ts';
import type { Name } from '../../dns/name.ts';
import { nameEquals, nameKey } from '../../dns/name.ts';
import { parseRdata, type Rdata, rdataEquals, type SoaRdata } from '../../dns/rdata.ts';
import { isRecordTypeName, type RecordTypeName } from '../../dns/rrtype.ts';
import { type RolloverTimings, rolloverTimings } from '../../zones/dnssec-rollover.ts';
import { ignoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import type {
  ApplyResult,
  Backend,
  BackendCapabilities,
  LiveDiff,
  LiveRRset,
  ProgrammedZone,
  RRsetProblem,
} from '../backend.ts';
import { PowerDnsClient, type ZoneInfo } from './client.ts';
import { powerDnsContent } from './content.ts';
import {
  type DesiredRRset,
  diffZone,
  entryKey,
  type HeldRRset,
  planPatches,
  type RRsetChange,
  rrsetKey,
} from './diff.ts';
import { applyDnssec } from './dnssec.ts';
import { PowerDnsError, recordFromError } from './errors.ts';
import { luaContent, luaDeniedCandidates } from './lua.ts';

export type { PowerDnsSettings };

/** Zone metadata kind listing the RRsets Zonekeeper owns (custom kinds start with X-). */
export const OWNERSHIP_METADATA = 'X-ZONEKEEPER-RRSETS';
/**
 * Zone metadata kind marking a zone Zonekeeper created itself (`POST /zones` answered 201). Only such a
 * zone is deleted with its DNSZone; a zone that existed before (made by hand or another tool, or by a
 * Zonekeeper too old to mark it) loses only Zonekeeper's RRsets and keys (docs/adr/0026).
 */
export const CREATED_METADATA = 'X-ZONEKEEPER-CREATED';
export const DEFAULT_RESYNC_SECONDS = 300;
export const DEFAULT_TIMEOUT_SECONDS = 10;
/** Below PowerDNS's default webserver-max-bodysize (2 MB), with room for escaping. */
export const DEFAULT_MAX_PATCH_BYTES = 1 << 20;
/** DNSSEC is checked against PowerDNS at least this often even when nothing changed (hand-made drift). */
const DNSSEC_RECHECK_MS = 3_600_000;

/**
 * The ZSK rollover's intervals from the zone (RFC 7583 §3.2.1): Ipub waits for the DNSKEY RRset's TTL,
 * Iret for the largest TTL of the zone, each plus the SOA refresh as the propagation delay to
 * secondaries that miss a NOTIFY. PowerDNS gives DNSKEY one of the SOA's TTLs; the larger is assumed.
 */
function rolloverTimingsOf(zone: ProgrammedZone): RolloverTimings {
  const dnskeyTtl = Math.max(zone.soa.ttl, zone.soa.minimum);
  let largest = dnskeyTtl;
  for (const rrset of zone.rrsets()) if (rrset.ttl > largest) largest = rrset.ttl;
  return rolloverTimings(zone.dnssec?.zskLifetimeSeconds ?? 0, dnskeyTtl, largest, zone.soa.refresh);
}
/** How long a complete apply stands for an apply of the same serial with nothing changed. */
const REAPPLY_GRACE_MS = 10_000;
/** PATCHes retried after PowerDNS named one record it refused (that record left out each time). */
const MAX_REFUSED_RECORDS = 32;

/**
 * PowerDNS serves the SOA Zonekeeper writes (SOA-EDIT off) and ALIAS (expand-alias); others can edit
 * it, so every apply reads it back. Transfers are PowerDNS's own configuration, not the class's.
 */
export const POWERDNS_CAPABILITIES: BackendCapabilities = {
  serial: 'authority',
  transfers: false,
  alias: true,
  steering: false,
  dnssec: true,
  driftRepair: true,
};

export interface PowerDnsBackendOptions {
  settings: PowerDnsSettings;
  /** Reads `apiKeySecretRef`. */
  secrets: SecretResolver;
  /** Reads `tls.caFile`; default: the file system. */
  readFile?: (path: string) => Promise<string>;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  maxPatchBytes?: number;
  /**
   * Whether PowerDNS may be asked to probe an address (LUA records' health checks): as Zonekeeper's
   * own probes, loopback, link-local and metadata addresses only when allow-listed.
   */
  probePermitted?: (address: string) => boolean;
  /** Called after every apply with what it did (tests, benchmarks). */
  onApply?: (origin: Name, stats: ApplyStats) => void;
}

/** What one apply did, for logs, tests and the benchmark. */
export interface ApplyStats {
  created: boolean;
  replaced: number;
  deleted: number;
  unchanged: number;
  patches: number;
  requests: number;
}

export class PowerDnsBackend implements Backend {
  readonly name = 'powerdns';
  readonly capabilities = POWERDNS_CAPABILITIES;
  /** The target serves on its own while Zonekeeper is down (change safety after a restart). */
  readonly keepsServing = true;
  private settings: PowerDnsSettings;
  private client: PowerDnsClient;
  private readonly options: PowerDnsBackendOptions;
  /**
   * PowerDNS's own spelling of contents it refused as "Not in expected format (parsed as '...')",
   * checked to mean the same: `${type} ${ours}` → theirs. Versions differ (4.7 has no `dohpath`).
   */
  private readonly spelling = new Map<string, string>();
  /** Per zone: the serial the last complete apply left in PowerDNS, and when (see applyZone). */
  private readonly verified = new Map<string, { serial: number; at: number }>();
  /** Per zone: the DNSSEC settings last brought about, and the state read back then. */
  private readonly dnssecKnown = new Map<
    string,
    { want: string; checkAfter: number; status?: DnssecStatus }
  >();
  /** PowerDNS's `enable-lua-records` as last read, and when (see luaCheck). */
  private luaEnabled: { value: string; at: number } | undefined;
  /** Per zone, with `enable-lua-records=no`: whether its ENABLE-LUA-RECORDS metadata is 1 (else why not), and when. */
  private readonly luaZone = new Map<string, { refused?: string; at: number }>();

  constructor(options: PowerDnsBackendOptions) {
    this.options = options;
    this.settings = options.settings;
    this.client = this.makeClient();
  }

  get resyncIntervalMs(): number {
    return (this.settings.resyncSeconds ?? DEFAULT_RESYNC_SECONDS) * 1000;
  }

  /** Takes a class's new settings; the client is rebuilt when how to reach PowerDNS changed. */
  configure(settings: PowerDnsSettings): void {
    const before = JSON.stringify(this.settings);
    this.settings = settings;
    if (JSON.stringify(settings) === before) return;
    this.client.close();
    this.client = this.makeClient();
  }

  close(): void {
    this.client.close();
  }

  async health(): Promise<{ ok: boolean; message: string }> {
    const server = await this.client.json<{ version?: string; daemon_type?: string }>(
      'GET',
      this.client.serverPath(),
      `GET server ${this.client.serverId}`,
    );
    return {
      ok: true,
      message: `PowerDNS ${server.daemon_type ?? 'authoritative'} ${server.version ?? '(version unknown)'} at ${this.client.url} (server ${this.client.serverId})`,
    };
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult> {
    const key = nameKey(zone.origin);
    const last = this.verified.get(key);
    // The controller applies a zone again right after a change (to hash it) with nothing new: a read
    // back of the same serial moments ago stands. Never across a resync interval, an error or problems.
    if (
      last !== undefined &&
      last.serial === zone.serial &&
      zone.delta !== undefined &&
      zone.delta.upserts.length === 0 &&
      zone.delta.deletes.length === 0 &&
      performance.now() - last.at < Math.min(REAPPLY_GRACE_MS, this.resyncIntervalMs / 2) &&
      // A change of the DNSSEC settings alone changes no RRset: it is applied all the same.
      this.dnssecKnown.get(key)?.want === (zone.dnssec === undefined ? '' : JSON.stringify(zone.dnssec))
    ) {
      return {};
    }
    this.verified.delete(key);
    const result = await this.apply(zone);
    if (result.problems === undefined) this.verified.set(key, { serial: zone.serial, at: performance.now() });
    return result;
  }

  private async apply(zone: ProgrammedZone): Promise<ApplyResult> {
    const client = this.client;
    const origin = zone.origin;
    const stats: ApplyStats = {
      created: false,
      replaced: 0,
      deleted: 0,
      unchanged: 0,
      patches: 0,
      requests: 0,
    };
    let [info, owned] = await Promise.all([this.getZone(origin), this.getOwned(origin)]);
    stats.requests += 2;
    if (info === undefined) {
      // Creation writes the SOA and NS only, the same with or without LUA records.
      const made = await this.createZone(zone, this.desiredOf(zone));
      info = made.info;
      owned = [];
      stats.created = true;
      stats.requests++;
      if (made.ours) {
        // Marked right after creation: a crash before the mark leaves a zone that deletion keeps
        // (the safe side), never a foreign zone that deletion removes.
        await this.putCreated(origin);
        stats.requests++;
      }
    }
    // After creation: the zone's ENABLE-LUA-RECORDS metadata needs the zone to exist.
    const lua = await this.luaCheck(zone);
    const desired = this.desiredOf(zone, lua.use, lua.unsteered);
    if (await this.fixZoneSettings(info)) stats.requests++;
    const ignored = ignoreMatcher(origin, zone.ignore);
    const diff = diffZone({
      origin,
      desired,
      held: info.rrsets ?? [],
      owned: new Set(owned),
      ...(ignored ? { ignored } : {}),
    });
    const problems: RRsetProblem[] = [...diff.problems, ...lua.problems];
    let recorded = new Set(owned);
    if (diff.claim.length > 0 || stats.created) {
      // Claimed before the RRsets exist: a crash in between leaves an entry for nothing (released
      // next time), never an RRset of ours that looks foreign. A new zone's list is written whole, so
      // nothing a deleted namesake left behind survives.
      recorded = new Set([...recorded, ...diff.claim]);
      await this.putOwned(origin, recorded);
      stats.requests++;
    }
    const refused = await this.patch(zone, desired, diff.deletes, diff.replaces, problems, stats);
    const final = new Set(recorded);
    for (const entry of diff.release) final.delete(entry);
    for (const key of refused) {
      const entry = diff.claim.find((e) => entryKey(e, origin) === key);
      if (entry !== undefined) final.delete(entry);
    }
    if (final.size !== recorded.size) {
      await this.putOwned(origin, final);
      stats.requests++;
    }
    stats.replaced = diff.replaces.length - refused.size;
    stats.deleted = diff.deletes.length;
    stats.unchanged = diff.unchanged;
    const dnssec = await this.dnssecOf(zone);
    stats.requests += dnssec.requests;
    this.options.onApply?.(origin, stats);
    if (stats.patches > 0 || stats.created) {
      this.options.log?.('info', `powerdns: zone ${origin} programmed at serial ${zone.serial}`, {
        url: client.url,
        created: stats.created,
        replaced: stats.replaced,
        deleted: stats.deleted,
        unchanged: stats.unchanged,
        problems: problems.length,
      });
    }
    for (const p of problems)
      this.options.log?.('warn', `powerdns: ${p.owner} ${p.type} not programmed (${p.reason}): ${p.message}`);
    return {
      ...(problems.length > 0 ? { problems } : {}),
      ...(dnssec.status ? { dnssec: dnssec.status } : {}),
    };
  }

  /**
   * The zone's DNSSEC brought to its settings: checked against PowerDNS on the first apply of the zone
   * by this process, when the settings change, when a rollover step is due, and at least hourly (keys
   * changed by hand); otherwise what the last check found, at no request.
   */
  private async dnssecOf(zone: ProgrammedZone): Promise<{ status?: DnssecStatus; requests: number }> {
    const key = nameKey(zone.origin);
    const want = zone.dnssec === undefined ? '' : JSON.stringify(zone.dnssec);
    const known = this.dnssecKnown.get(key);
    const now = Date.now();
    if (known?.want === want && now < known.checkAfter)
      return { ...(known.status ? { status: known.status } : {}), requests: 0 };
    this.dnssecKnown.delete(key);
    const applied = await applyDnssec(
      this.client,
      zone.origin,
      zone.dnssec,
      zone.dnssec ? { timings: rolloverTimingsOf(zone), now: Math.floor(now / 1000) } : undefined,
    );
    if (applied.changed)
      this.options.log?.(
        'info',
        `powerdns: zone ${zone.origin} DNSSEC ${zone.dnssec ? `signed (${want})` : 'signing removed'}`,
        applied.status?.rollover ? { rollover: applied.status.rollover.phase } : {},
      );
    const checkAfter = Math.min(
      now + DNSSEC_RECHECK_MS,
      applied.dueAt !== undefined ? applied.dueAt * 1000 : Infinity,
    );
    this.dnssecKnown.set(key, { want, checkAfter, ...(applied.status ? { status: applied.status } : {}) });
    return { ...(applied.status ? { status: applied.status } : {}), requests: applied.requests };
  }

  get location(): string {
    return `PowerDNS at ${this.client.url} (server ${this.client.serverId})`;
  }

  /**
   * The zone as PowerDNS holds it now against `zone`, decided by the same `diffZone` an apply runs
   * (ownership metadata, ignore rules), with the SOA at `zone.serial`. Two GETs; nothing is written.
   */
  async liveDiff(zone: ProgrammedZone): Promise<LiveDiff> {
    const origin = zone.origin;
    const desired = this.desiredOf(zone);
    const [info, owned] = await Promise.all([this.getZone(origin), this.getOwned(origin)]);
    const held = info?.rrsets ?? [];
    const ignored = ignoreMatcher(origin, zone.ignore);
    const diff = diffZone({
      origin,
      desired,
      held,
      owned: new Set(info ? owned : []),
      ...(ignored ? { ignored } : {}),
    });
    const heldByKey = new Map(held.map((h) => [rrsetKey(h.name, h.type), h]));
    const out: LiveDiff = {
      exists: info !== undefined,
      add: [],
      change: [],
      delete: [],
      notOwned: [],
      ignored: [],
      problems: diff.problems,
    };
    for (const r of diff.replaces) {
      if (r.changetype !== 'REPLACE') continue;
      const after: LiveRRset = {
        owner: r.name,
        type: r.type,
        ttl: r.ttl,
        records: r.records.map((x) => x.content).sort(),
      };
      const before = heldByKey.get(rrsetKey(r.name, r.type));
      if (before) out.change.push({ owner: r.name, type: r.type, before: heldLive(before), after });
      else out.add.push(after);
    }
    for (const d of diff.deletes) {
      const before = heldByKey.get(rrsetKey(d.name, d.type));
      if (before) out.delete.push(heldLive(before));
    }
    const mine = new Set<string>();
    for (const entry of info ? owned : []) {
      const key = entryKey(entry, origin);
      if (key !== undefined) mine.add(key);
    }
    for (const h of held) {
      if (ignored?.(h.name, h.type)) out.ignored.push(heldLive(h));
      else if (
        !mine.has(rrsetKey(h.name, h.type)) &&
        !((h.type === 'SOA' || h.type === 'NS') && nameEquals(h.name, origin))
      )
        out.notOwned.push(heldLive(h));
    }
    return out;
  }

  async deleteZone(origin: Name): Promise<void> {
    this.verified.delete(nameKey(origin));
    this.dnssecKnown.delete(nameKey(origin));
    const client = this.client;
    const what = `DELETE zone ${origin}`;
    const info = await this.getZone(origin, false);
    if (info === undefined) return;
    if (!(await this.getCreated(origin))) {
      await this.releaseZone(origin);
      return;
    }
    // Ownership first: LMDB has kept a deleted zone's data before (PowerDNS#11114, #18051), and a zone
    // created again under the name must not inherit claims. The creation mark goes last of the two: a
    // failure before the zone is deleted then still finds it marked and deletes it on the retry.
    await client.request('DELETE', client.zonePath(origin, `/metadata/${OWNERSHIP_METADATA}`), what, {
      expect: [404, 422],
    });
    await client.request('DELETE', client.zonePath(origin, `/metadata/${CREATED_METADATA}`), what, {
      expect: [404, 422],
    });
    await client.request('DELETE', client.zonePath(origin), what, { expect: [404] });
    if ((await this.getZone(origin, false)) !== undefined) {
      throw new PowerDnsError(
        'PDNS_HTTP',
        `PowerDNS at ${client.url} still holds zone ${origin} after deleting it`,
      );
    }
  }

  /**
   * Deletion of a zone Zonekeeper did not create: the zone stays with everything someone else made in
   * it; Zonekeeper's RRsets (the ownership list), its DNSSEC keys and metadata, and the list itself
   * go. The apex SOA and NS stay as Zonekeeper last wrote them (a zone cannot be without them, and what
   * they held before the takeover is not known).
   */
  private async releaseZone(origin: Name): Promise<void> {
    const client = this.client;
    const [info, owned] = await Promise.all([this.getZone(origin), this.getOwned(origin)]);
    if (info === undefined) return;
    const mine = new Set<string>();
    for (const entry of owned) {
      const key = entryKey(entry, origin);
      if (key !== undefined) mine.add(key);
    }
    const deletes: RRsetChange[] = (info.rrsets ?? [])
      .filter((h) => mine.has(rrsetKey(h.name, h.type)))
      .filter((h) => !((h.type === 'SOA' || h.type === 'NS') && nameEquals(h.name, origin)))
      .map((h) => ({ name: h.name, type: h.type, changetype: 'DELETE' as const }));
    for (const rrsets of planPatches(
      { deletes, replaces: [] },
      this.options.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES,
    ))
      await client.request('PATCH', client.zonePath(origin), `PATCH zone ${origin} (release)`, {
        body: { rrsets },
      });
    // Keys Zonekeeper created (X-ZONEKEEPER-DNSSEC lists them) and its DNSSEC metadata; foreign keys stay.
    await applyDnssec(client, origin, undefined);
    await client.request(
      'DELETE',
      client.zonePath(origin, `/metadata/${OWNERSHIP_METADATA}`),
      `DELETE metadata ${OWNERSHIP_METADATA} of ${origin}`,
      { expect: [404, 422] },
    );
    this.options.log?.(
      'info',
      `powerdns: zone ${origin} was not created by Zonekeeper (no ${CREATED_METADATA} metadata): kept, ` +
        `with everything else in it; removed Zonekeeper's ${deletes.length} RRsets and its DNSSEC keys. ` +
        `If Zonekeeper did create it (before it marked zones), delete it in PowerDNS by hand (pdnsutil delete-zone ${origin})`,
    );
  }

  /** The serial PowerDNS serves: its SOA, read back (never a cached value). */
  async servedSerial(origin: Name): Promise<number | undefined> {
    const client = this.client;
    const response = await client.request(
      'GET',
      client.zonePath(origin, `?rrset_name=${encodeURIComponent(origin)}&rrset_type=SOA`),
      `GET SOA of ${origin}`,
      { expect: [404, 422] },
    );
    if (response.status !== 200) return undefined;
    const zone = client.parse<ZoneInfo>(response, `GET SOA of ${origin}`);
    const soa = zone.rrsets?.find((r) => r.type === 'SOA' && nameEquals(r.name, origin));
    const content = soa?.records[0]?.content;
    if (content === undefined) return undefined;
    const serial = Number(content.trim().split(/\s+/)[2]);
    return Number.isInteger(serial) ? serial : undefined;
  }

  // -------------------------------------------------------------------------------------------------

  private makeClient(): PowerDnsClient {
    const settings = this.settings;
    return new PowerDnsClient({
      url: settings.url,
      serverId: settings.serverId ?? 'localhost',
      timeoutMs: (settings.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
      apiKey: () => this.options.secrets(settings.apiKeySecretRef),
      ...(settings.tls ? { tls: settings.tls } : {}),
      ...(this.options.readFile ? { readFile: this.options.readFile } : {}),
    });
  }

  private contentOf(rdata: Rdata): string {
    const ours = powerDnsContent(rdata);
    return this.spelling.get(`${rdata.type} ${ours}`) ?? ours;
  }

  /** The SOA (Zonekeeper's serial) and every RRset of the zone, with PowerDNS content. */
  /**
   * Whether steered RRsets go to PowerDNS as LUA records: the class opts in (`luaRecords`) and
   * PowerDNS evaluates them: `enable-lua-records` in its configuration (read through the API and
   * kept for a minute), else the zone's `ENABLE-LUA-RECORDS` metadata, which is set to 1 through the
   * API when it is not (kept for a minute too). PowerDNS's API refuses to write that metadata kind
   * (4.7 to 5.0: HTTP 422 "Unsupported metadata kind"); set by hand (`pdnsutil set-meta`) it is read
   * back. Opted in but not evaluated: every steered RRset is reported (and programmed with every
   * candidate), never published as a LUA record that would fail.
   */
  private async luaCheck(
    zone: ProgrammedZone,
  ): Promise<{ use: boolean; problems: RRsetProblem[]; unsteered?: ReadonlySet<string> }> {
    if (!this.settings.luaRecords) return { use: false, problems: [] };
    const steered = [...zone.rrsets()].filter((r) => r.steering !== undefined);
    if (steered.length === 0) return { use: true, problems: [] };
    const checked = await this.luaCheckEnabled(zone, steered);
    if (!checked.use) return checked;
    // Health checks PowerDNS must not run (loopback, metadata addresses): served unsteered, reported.
    const permitted = this.options.probePermitted;
    if (!permitted) return checked;
    const unsteered = new Set<string>();
    const problems: RRsetProblem[] = [];
    for (const r of steered) {
      const denied = luaDeniedCandidates(r.steering!, permitted);
      if (denied.length === 0) continue;
      unsteered.add(`${r.type} ${nameKey(r.owner)}`);
      problems.push({
        owner: r.owner,
        type: r.type,
        origin: r.origin,
        reason: 'BackendRejected',
        message:
          `its health check would make ${this.location} probe ${denied.join(', ')}, a loopback, link-local or cloud metadata address: ` +
          'served with every candidate, unsteered; check other addresses, or the operator allows the network with --health-probe-allow',
      });
    }
    return { use: true, problems, unsteered };
  }

  private async luaCheckEnabled(
    zone: ProgrammedZone,
    steered: RRset[],
  ): Promise<{ use: boolean; problems: RRsetProblem[] }> {
    const now = performance.now();
    if (this.luaEnabled === undefined || now - this.luaEnabled.at > 60_000) {
      const what = 'GET server configuration';
      const response = await this.client.request('GET', this.client.serverPath('/config'), what);
      const settings = this.client.parse<{ name: string; value: string }[]>(response, what);
      const value = settings.find((s) => s.name === 'enable-lua-records')?.value ?? 'no';
      this.luaEnabled = { value, at: now };
    }
    if (this.luaEnabled.value !== 'no') return { use: true, problems: [] };
    let known = this.luaZone.get(zone.origin);
    if (known === undefined || now - known.at > 60_000) {
      known = { at: now, ...(await this.luaZoneMetadata(zone.origin)) };
      this.luaZone.set(zone.origin, known);
    }
    if (known.refused === undefined) return { use: true, problems: [] };
    const message =
      `${this.location} does not evaluate LUA records (enable-lua-records=no, and the zone's ENABLE-LUA-RECORDS ` +
      `metadata could not be set: ${known.refused}): the record set is served with every candidate, unsteered; ` +
      `set enable-lua-records=yes in pdns.conf, or run pdnsutil set-meta ${zone.origin} ENABLE-LUA-RECORDS 1`;
    return {
      use: false,
      problems: steered.map((r) => ({
        owner: r.owner,
        type: r.type,
        origin: r.origin,
        reason: 'BackendRejected' as const,
        message,
      })),
    };
  }

  /** Reads the zone's ENABLE-LUA-RECORDS metadata and sets it to 1 when it is not: why not, if it cannot be. */
  private async luaZoneMetadata(origin: string): Promise<{ refused?: string }> {
    const client = this.client;
    const list = `GET metadata of ${origin}`;
    const held = client.parse<{ kind: string; metadata: string[] }[]>(
      await client.request('GET', client.zonePath(origin, '/metadata'), list),
      list,
    );
    if (held.find((m) => m.kind === 'ENABLE-LUA-RECORDS')?.metadata.join() === '1') return {};
    const what = `PUT metadata ENABLE-LUA-RECORDS of ${origin}`;
    const response = await client.request(
      'PUT',
      client.zonePath(origin, '/metadata/ENABLE-LUA-RECORDS'),
      what,
      {
        body: { kind: 'ENABLE-LUA-RECORDS', metadata: ['1'] },
        expect: [400, 422],
      },
    );
    if (response.status >= 200 && response.status < 300) return {};
    let error = response.body;
    try {
      error = (JSON.parse(response.body) as { error?: string }).error ?? response.body;
    } catch {}
    return { refused: `the API answered ${response.status} ${error.slice(0, 200)}` };
  }

  private desiredOf(zone: ProgrammedZone, lua = false, unsteered?: ReadonlySet<string>): DesiredRRset[] {
    const soa: SoaRdata = {
      type: 'SOA',
      mname: zone.soa.mname,
      rname: zone.soa.rname,
      serial: zone.serial,
      refresh: zone.soa.refresh,
      retry: zone.soa.retry,
      expire: zone.soa.expire,
      minimum: zone.soa.minimum,
    };
    const out: DesiredRRset[] = [
      {
        owner: zone.origin,
        type: 'SOA',
        ttl: zone.soa.ttl,
        rdata: [soa],
        content: [this.contentOf(soa)],
        origin: { kind: 'apex' },
      },
    ];
    for (const rrset of zone.rrsets()) {
      if (lua && rrset.steering && !unsteered?.has(`${rrset.type} ${nameKey(rrset.owner)}`)) {
        // The LUA record replaces the A/AAAA RRset (PowerDNS answers A queries from it).
        out.push({
          owner: rrset.owner,
          type: 'LUA' as RecordTypeName,
          ttl: rrset.ttl,
          rdata: rrset.rdata.slice(0, 1),
          content: [luaContent(rrset.type, rrset.steering)],
          origin: rrset.origin,
        });
        continue;
      }
      out.push({
        owner: rrset.owner,
        type: rrset.type,
        ttl: rrset.ttl,
        rdata: rrset.rdata,
        content: rrset.rdata.map((r) => this.contentOf(r)),
        origin: rrset.origin,
      });
    }
    return out;
  }

  private async getZone(origin: Name, rrsets = true): Promise<ZoneInfo | undefined> {
    const client = this.client;
    const what = `GET zone ${origin}`;
    const response = await client.request(
      'GET',
      client.zonePath(origin, rrsets ? '' : '?rrsets=false'),
      what,
      { expect: [404] },
    );
    if (response.status === 404) return undefined;
    return client.parse<ZoneInfo>(response, what);
  }

  private async getOwned(origin: Name): Promise<string[]> {
    const client = this.client;
    const what = `GET metadata ${OWNERSHIP_METADATA} of ${origin}`;
    const response = await client.request(
      'GET',
      client.zonePath(origin, `/metadata/${OWNERSHIP_METADATA}`),
      what,
      { expect: [404, 422] },
    );
    if (response.status !== 200) return [];
    const parsed = client.parse<{ metadata?: unknown }>(response, what);
    return Array.isArray(parsed.metadata) ? parsed.metadata.filter((v) => typeof v === 'string') : [];
  }

  /** Whether the zone carries Zonekeeper's creation mark. */
  private async getCreated(origin: Name): Promise<boolean> {
    const client = this.client;
    const what = `GET metadata ${CREATED_METADATA} of ${origin}`;
    const response = await client.request(
      'GET',
      client.zonePath(origin, `/metadata/${CREATED_METADATA}`),
      what,
      { expect: [404, 422] },
    );
    if (response.status !== 200) return false;
    const parsed = client.parse<{ metadata?: unknown }>(response, what);
    return Array.isArray(parsed.metadata) && parsed.metadata.length > 0;
  }

  private async putCreated(origin: Name): Promise<void> {
    const client = this.client;
    await client.request(
      'PUT',
      client.zonePath(origin, `/metadata/${CREATED_METADATA}`),
      `PUT metadata ${CREATED_METADATA} of ${origin}`,
      { body: { kind: CREATED_METADATA, metadata: ['1'] } },
    );
  }

  private async putOwned(origin: Name, entries: ReadonlySet<string>): Promise<void> {
    const client = this.client;
    await client.request(
      'PUT',
      client.zonePath(origin, `/metadata/${OWNERSHIP_METADATA}`),
      `PUT metadata ${OWNERSHIP_METADATA} of ${origin}`,
      { body: { kind: OWNERSHIP_METADATA, metadata: [...entries].sort() } },
    );
  }

  /**
   * Creates the zone with the class's name servers and Zonekeeper's SOA at serial 0 (the real serial
   * comes with the content, in the PATCH), SOA-EDIT-API and SOA-EDIT empty. 409: it exists already
   * (created meanwhile, or by someone else) — then it is read like any other, and is not Zonekeeper's
   * (`ours` false: deleting the DNSZone keeps it).
   */
  private async createZone(
    zone: ProgrammedZone,
    desired: readonly DesiredRRset[],
  ): Promise<{ info: ZoneInfo; ours: boolean }> {
    const client = this.client;
    const soa = desired[0]!;
    const ns = desired.find((d) => d.type === 'NS' && nameEquals(d.owner, zone.origin));
    const serialZero = { ...(soa.rdata[0] as SoaRdata), serial: 0 };
    const what = `POST zone ${zone.origin}`;
    const response = await client.request('POST', client.serverPath('/zones'), what, {
      body: {
        name: zone.origin,
        kind: this.settings.zoneKind ?? 'Native',
        nameservers: ns ? ns.rdata.map((r) => (r.type === 'NS' ? r.host : '')).filter(Boolean) : [],
        soa_edit_api: '',
        soa_edit: '',
        rrsets: [
          {
            name: zone.origin,
            type: 'SOA',
            ttl: soa.ttl,
            records: [{ content: this.contentOf(serialZero), disabled: false }],
          },
        ],
      },
      expect: [409],
    });
    const ours = response.status === 201;
    if (ours) {
      const created = client.parse<ZoneInfo>(response, what);
      if (Array.isArray(created.rrsets)) return { info: created, ours };
    }
    const info = await this.getZone(zone.origin);
    if (info === undefined)
      throw new PowerDnsError('PDNS_HTTP', `PowerDNS at ${client.url} did not keep zone ${zone.origin}`);
    return { info, ours };
  }

  /** Kind, SOA-EDIT-API and SOA-EDIT as configured, also when someone changed them by hand. */
  private async fixZoneSettings(info: ZoneInfo): Promise<boolean> {
    const kind = this.settings.zoneKind ?? 'Native';
    const sameKind = normalizeKind(info.kind) === normalizeKind(kind);
    if (sameKind && (info.soa_edit_api ?? '') === '' && (info.soa_edit ?? '') === '') return false;
    this.options.log?.(
      'warn',
      `powerdns: zone ${info.name} had kind ${JSON.stringify(info.kind)}, soa_edit_api ${JSON.stringify(info.soa_edit_api ?? '')}, soa_edit ${JSON.stringify(info.soa_edit ?? '')}; setting kind ${kind} and both SOA edits empty (Zonekeeper writes the serial)`,
    );
    const client = this.client;
    await client.request('PUT', client.zonePath(info.name), `PUT zone ${info.name}`, {
      body: { kind, soa_edit_api: '', soa_edit: '' },
    });
    return true;
  }

  /**
   * Sends the change (normally one PATCH). A 422 naming one record is handled and the PATCH sent
   * again: content PowerDNS only spells differently is re-sent in its spelling (remembered); content
   * it refuses is left out and reported (`BackendRejected`). Returns the keys of RRsets left out.
   */
  private async patch(
    zone: ProgrammedZone,
    desired: readonly DesiredRRset[],
    deletes: RRsetChange[],
    replaces: RRsetChange[],
    problems: RRsetProblem[],
    stats: ApplyStats,
  ): Promise<Set<string>> {
    const client = this.client;
    const refused = new Set<string>();
    const byKey = new Map(desired.map((d) => [rrsetKey(d.owner, d.type), d]));
    let pending = replaces;
    for (let attempt = 0; ; attempt++) {
      const bodies = planPatches(
        { deletes, replaces: pending },
        this.options.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES,
      );
      let failed: PowerDnsError | undefined;
      for (const rrsets of bodies) {
        try {
          await client.request('PATCH', client.zonePath(zone.origin), `PATCH zone ${zone.origin}`, {
            body: { rrsets },
          });
          stats.patches++;
          stats.requests++;
          // What is applied stays applied; only the rest is sent again.
          const done = new Set(rrsets);
          deletes = deletes.filter((c) => !done.has(c));
          pending = pending.filter((c) => !done.has(c));
        } catch (e) {
          if (!(e instanceof PowerDnsError) || e.code !== 'PDNS_UNPROCESSABLE') throw e;
          failed = e;
          break;
        }
      }
      if (failed === undefined) return refused;
      const named = recordFromError(failed.detail ?? '');
      const key = named && isRecordTypeName(named.type) ? rrsetKey(named.owner, named.type) : undefined;
      const d = key === undefined ? undefined : byKey.get(key);
      if (named === undefined || key === undefined || d === undefined || attempt >= MAX_REFUSED_RECORDS)
        throw failed;
      if (
        named.parsedAs !== undefined &&
        named.content !== undefined &&
        this.learnSpelling(d, named.content, named.parsedAs)
      ) {
        pending = pending.map((c) =>
          c.changetype === 'REPLACE' && rrsetKey(c.name, c.type) === key
            ? {
                ...c,
                records: d.rdata.map((r) => ({ content: this.contentOf(r), disabled: false as const })),
              }
            : c,
        );
        continue;
      }
      if (d.type === 'SOA') throw failed;
      refused.add(key);
      pending = pending.filter((c) => rrsetKey(c.name, c.type) !== key);
      problems.push({
        owner: d.owner,
        type: d.type,
        origin: d.origin,
        reason: 'BackendRejected',
        message: `PowerDNS refused ${d.owner} ${d.type}: ${named.reason}; change the record so PowerDNS accepts it`,
      });
    }
  }

  /** Remembers PowerDNS's spelling of a content when it means exactly the same record. */
  private learnSpelling(d: DesiredRRset, ours: string, theirs: string): boolean {
    let parsed: Rdata;
    try {
      parsed = parseRdata(d.type, theirs, d.owner);
    } catch {
      return false;
    }
    const i = d.content.indexOf(ours);
    const mine = i >= 0 ? d.rdata[i] : undefined;
    if (mine === undefined || !rdataEquals(mine, parsed)) return false;
    this.spelling.set(`${d.type} ${powerDnsContent(mine)}`, theirs);
    return true;
  }
}

/** Newer PowerDNS names the kinds Primary/Secondary (4.7 already accepts them); either may come back. */
function normalizeKind(kind: string): string {
  const k = kind.toLowerCase();
  return k === 'primary' ? 'master' : k === 'secondary' ? 'slave' : k;
}

/** An RRset PowerDNS holds, as plan --live shows it. */
function heldLive(h: HeldRRset): LiveRRset {
  return {
    owner: h.name,
    type: h.type,
    ttl: h.ttl,
    records: h.records.map((r) => (r.disabled === true ? `${r.content} (disabled)` : r.content)).sort(),
  };
}
