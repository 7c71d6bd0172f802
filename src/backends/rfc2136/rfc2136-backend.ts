/**
 * Any primary that accepts DNS UPDATE (RFC 2136) with TSIG (RFC 8945) — Knot DNS, BIND — as a
 * backend (docs/backends/rfc2136.md).
 *
 * Every apply reads the zone by AXFR (RFC 5936, signed), plans the difference against the computed
 * zone (./plan.ts: only RRsets the zone's ownership record lists are touched) and sends it as UPDATE
 * messages guarded by prerequisites. When a prerequisite fails — someone changed the zone between the
 * read and the UPDATE — nothing of that message is applied (RFC 2136 §3.2): the zone is read and
 * planned again, up to MAX_ATTEMPTS times. The server keeps its own SOA and serial, so Programmed
 * is the content read back (`servedContent`: the plan from a fresh read is empty).
 */
import net from 'node:net';
import type { Rfc2136Settings } from '../../api/index.ts';
import type { SecretResolver } from '../../api/secret-ref.ts';
import { Rcode } from '../../dns/message.ts';
import type { Name } from '../../dns/name.ts';
import { nameEquals, nameKey } from '../../dns/name.ts';
import {
  printRdata,
  printUnknownRdata,
  type Rdata,
  recordTypeOfCode,
  type UnknownRdata,
} from '../../dns/rdata.ts';
import { parseTsigKey, type TsigKey } from '../../dns/tsig.ts';
import { AxfrError, axfr } from '../../server/transfer/axfr-client.ts';
import { ignoreMatcher } from '../../zones/ignore.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  type ApplyResult,
  type Backend,
  type BackendCapabilities,
  BackendError,
  type LiveDiff,
  type LiveRRset,
  type ProgrammedZone,
  type RRsetProblem,
} from '../backend.ts';
import {
  type HeldRRset,
  type HeldState,
  heldFromAxfr,
  planDeletion,
  planZone,
  type UpdateUnit,
} from './plan.ts';
import { packMessages, rcodeName, sendUpdate, tsigErrorName, type UpdateTarget } from './update-client.ts';

export type { Rfc2136Settings };

export const DEFAULT_PORT = 53;
export const DEFAULT_RESYNC_SECONDS = 300;
export const DEFAULT_TIMEOUT_SECONDS = 10;
/** Reads and plans after a failed prerequisite before the apply is reported failed (and retried). */
export const MAX_ATTEMPTS = 8;
/** More records than this in one zone end the AXFR. */
const MAX_RECORDS = 5_000_000;

/**
 * The server keeps its own SOA (its serial is not Zonekeeper's); it does its own transfers and
 * NOTIFY; it serves no ALIAS; others can edit it, so every apply reads it back.
 */
export const RFC2136_CAPABILITIES: BackendCapabilities = {
  serial: 'own',
  transfers: false,
  alias: false,
  steering: false,
  dnssec: false,
  driftRepair: true,
};

export interface Rfc2136BackendOptions {
  settings: Rfc2136Settings;
  /** Reads the keys' `secretRef`s. */
  secrets: SecretResolver;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** The message size limit (tests use a small one to see a change split). Default 65535. */
  maxMessageBytes?: number;
  /**
   * Called after each read and plan, before the UPDATE is sent (tests use it to change the zone
   * concurrently, as someone with nsupdate would).
   */
  beforeSend?: (origin: Name, attempt: number) => Promise<void>;
  /** Called after every apply with what it did (tests). */
  onApply?: (origin: Name, stats: ApplyStats) => void;
}

export interface ApplyStats {
  attempts: number;
  messages: number;
  units: number;
}

export class Rfc2136Backend implements Backend {
  readonly name = 'rfc2136';
  readonly capabilities = RFC2136_CAPABILITIES;
  /** The target serves on its own while Zonekeeper is down (change safety after a restart). */
  readonly keepsServing = true;
  private settings: Rfc2136Settings;
  private readonly options: Rfc2136BackendOptions;

  constructor(options: Rfc2136BackendOptions) {
    this.options = options;
    this.settings = options.settings;
  }

  get resyncIntervalMs(): number {
    return (this.settings.resyncSeconds ?? DEFAULT_RESYNC_SECONDS) * 1000;
  }

  configure(settings: Rfc2136Settings): void {
    this.settings = settings;
  }

  private get where(): string {
    const host = this.settings.server;
    return `${host.includes(':') ? `[${host}]` : host}:${this.settings.port ?? DEFAULT_PORT}`;
  }

  private get timeoutMs(): number {
    return (this.settings.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  }

  private async key(which: 'tsigKey' | 'transferKey'): Promise<TsigKey> {
    const config =
      which === 'transferKey' ? (this.settings.transferKey ?? this.settings.tsigKey) : this.settings.tsigKey;
    let secret: string;
    try {
      secret = await this.options.secrets(config.secretRef);
    } catch (e) {
      throw new BackendError(
        'BackendRejected',
        `rfc2136: the secret of TSIG key ${config.name}: ${(e as Error).message}`,
        {
          cause: e,
          code: 'RFC2136_SECRET',
        },
      );
    }
    try {
      return parseTsigKey({ name: config.name, algorithm: config.algorithm, secret });
    } catch (e) {
      throw new BackendError('BackendRejected', `rfc2136: TSIG key ${config.name}: ${(e as Error).message}`, {
        cause: e,
        code: 'RFC2136_BAD_KEY',
      });
    }
  }

  /** What the server holds for the zone, by AXFR; undefined when it is not authoritative for it. */
  async read(origin: Name): Promise<HeldState | undefined> {
    const key = await this.key('transferKey');
    const keyName = (this.settings.transferKey ?? this.settings.tsigKey).name;
    try {
      const result = await axfr({
        host: this.settings.server,
        port: this.settings.port ?? DEFAULT_PORT,
        zone: origin,
        key,
        timeoutMs: this.timeoutMs,
        maxRecords: MAX_RECORDS,
      });
      return heldFromAxfr(origin, result.records);
    } catch (e) {
      if (!(e instanceof AxfrError)) throw e;
      if (e.rcode === Rcode.NOTAUTH && e.tsigError === undefined) return undefined;
      if (e.code === 'AXFR_TSIG' || e.tsigError !== undefined)
        throw new BackendError(
          'BackendRejected',
          `${e.message}; spec.backend.rfc2136.${this.settings.transferKey ? 'transferKey' : 'tsigKey'} (key ${keyName}) must be a key the server at ${this.where} knows, with the same algorithm and secret`,
          { cause: e, code: 'RFC2136_TSIG' },
        );
      if (e.code === 'AXFR_REFUSED')
        throw new BackendError(
          'BackendRejected',
          `${e.message}; allow AXFR of ${origin} with key ${keyName} on the server (Knot: an acl with action transfer; BIND: allow-transfer { key ${keyName}; })`,
          { cause: e, code: 'RFC2136_AXFR_REFUSED' },
        );
      if (e.code === 'AXFR_MALFORMED' || e.code === 'AXFR_TOO_LARGE')
        throw new BackendError('BackendRejected', e.message, { cause: e, code: 'RFC2136_AXFR' });
      throw new BackendError('BackendUnreachable', e.message, { cause: e, code: 'RFC2136_UNREACHABLE' });
    }
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult> {
    const origin = zone.origin;
    const desired = [...zone.rrsets()];
    const ignored = ignoreMatcher(origin, zone.ignore);
    const target = await this.target();
    let messagesSent = 0;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const held = await this.read(origin);
      if (held === undefined)
        throw new BackendError(
          'BackendRejected',
          `the server at ${this.where} is not authoritative for ${origin} (it answered NOTAUTH): configure ${origin} there as a primary zone that accepts UPDATE with key ${target.key.name}`,
          { code: 'RFC2136_ZONE_NOT_SERVED' },
        );
      const plan = planZone(origin, desired, held, ignored);
      const problems: RRsetProblem[] = [...plan.problems];
      const { messages, tooLarge } = packMessages(origin, plan.units, this.options.maxMessageBytes);
      for (const unit of tooLarge) problems.push(...this.tooLarge(unit, desired));
      await this.options.beforeSend?.(origin, attempt);
      const sent = await this.send(target, origin, messages);
      messagesSent += sent.messages;
      if (sent.replan) {
        this.options.log?.(
          'info',
          `rfc2136: ${origin} changed on the server since it was read (a prerequisite failed: ${rcodeName(sent.rcode)}); reading it again`,
          { attempt },
        );
        continue;
      }
      this.options.onApply?.(origin, { attempts: attempt, messages: messagesSent, units: plan.units.length });
      if (messages.length > 0)
        this.options.log?.('info', `rfc2136: zone ${origin} programmed for serial ${zone.serial}`, {
          server: this.where,
          messages: messages.length,
          changes: plan.units.flatMap((u) => u.describe).length,
          problems: problems.length,
        });
      for (const p of problems)
        this.options.log?.(
          'warn',
          `rfc2136: ${p.owner} ${p.type} not programmed (${p.reason}): ${p.message}`,
        );
      return problems.length > 0 ? { problems } : {};
    }
    throw new BackendError(
      'BackendRejected',
      `${origin} on the server at ${this.where} changed between every read and UPDATE (${MAX_ATTEMPTS} attempts); another writer is changing the RRsets Zonekeeper owns — stop it, and the change is retried`,
      { code: 'RFC2136_CONCURRENT_CHANGES' },
    );
  }

  async deleteZone(origin: Name): Promise<void> {
    const target = await this.target();
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const held = await this.read(origin);
      if (held === undefined) return;
      const units = planDeletion(origin, held);
      if (units.length === 0) return;
      const { messages, tooLarge } = packMessages(origin, units, this.options.maxMessageBytes);
      if (tooLarge.length > 0)
        throw new BackendError(
          'BackendRejected',
          `deleting ${tooLarge[0]!.owner} needs an UPDATE larger than 65535 octets; delete it on the server by hand`,
          { code: 'RFC2136_TOO_LARGE' },
        );
      const sent = await this.send(target, origin, messages);
      if (!sent.replan) return;
    }
    throw new BackendError(
      'BackendRejected',
      `${origin} on the server at ${this.where} changed between every read and UPDATE while deleting (${MAX_ATTEMPTS} attempts)`,
      { code: 'RFC2136_CONCURRENT_CHANGES' },
    );
  }

  /** The server's own serial, when the zone holds anything of Zonekeeper's (its ownership record). */
  async servedSerial(origin: Name): Promise<number | undefined> {
    const held = await this.read(origin);
    return held?.hasOwnership ? held.serial : undefined;
  }

  get location(): string {
    return `RFC 2136 primary at ${this.where}`;
  }

  /**
   * The zone as the server holds it now (AXFR) against `zone`, decided by the `planZone` an apply
   * runs (ownership record, ignore rules). The server's SOA is its own and is not compared. Nothing
   * is sent but the AXFR.
   */
  async liveDiff(zone: ProgrammedZone): Promise<LiveDiff> {
    const origin = zone.origin;
    const held = await this.read(origin);
    if (held === undefined)
      throw new BackendError(
        'BackendRejected',
        `the server at ${this.where} is not authoritative for ${origin} (it answered NOTAUTH): configure ${origin} there as a primary zone that accepts UPDATE`,
        { code: 'RFC2136_ZONE_NOT_SERVED' },
      );
    const desired = [...zone.rrsets()];
    const ignored = ignoreMatcher(origin, zone.ignore);
    const plan = planZone(origin, desired, held, ignored);
    const heldOf = (owner: Name, type: string) =>
      [...held.rrsets.values()].find(
        (h) => nameEquals(h.owner, owner) && (recordTypeOfCode(h.type) ?? `TYPE${h.type}`) === type,
      );
    const wanted = new Map(desired.map((d) => [`${nameKey(d.owner)} ${d.type}`, d]));
    const out: LiveDiff = {
      exists: true,
      add: [],
      change: [],
      delete: [],
      notOwned: [],
      ignored: [],
      problems: plan.problems,
    };
    for (const c of plan.changes) {
      const d = wanted.get(`${nameKey(c.owner)} ${c.type}`);
      const h = heldOf(c.owner, c.type);
      const after: LiveRRset | undefined = d && {
        owner: d.owner,
        type: d.type,
        ttl: d.ttl,
        records: d.rdata.map(printRdata).sort(),
      };
      if (c.op === 'add' && after) out.add.push(after);
      else if (c.op === 'replace' && after && h)
        out.change.push({ owner: c.owner, type: c.type, before: heldLive(h), after });
      else if (c.op === 'delete' && h) out.delete.push(heldLive(h));
    }
    for (const h of held.rrsets.values()) {
      const type = recordTypeOfCode(h.type) ?? `TYPE${h.type}`;
      if (ignored?.(h.owner, type)) out.ignored.push(heldLive(h));
      else if (
        !held.owned.has(`${nameKey(h.owner)} ${type}`) &&
        !(type === 'NS' && nameEquals(h.owner, origin))
      )
        out.notOwned.push(heldLive(h));
    }
    return out;
  }

  /** Whether a fresh read needs no change: everything Zonekeeper may program is programmed. */
  async servedContent(
    zone: Pick<ProgrammedZone, 'origin' | 'serial' | 'soa' | 'rrsets' | 'ignore'>,
  ): Promise<boolean> {
    const held = await this.read(zone.origin);
    if (held === undefined) return false;
    const desired = [...zone.rrsets()];
    const plan = planZone(zone.origin, desired, held, ignoreMatcher(zone.origin, zone.ignore));
    const { tooLarge } = packMessages(zone.origin, plan.units, this.options.maxMessageBytes);
    // Units too large for any message are reported problems, like conflicts; everything else is in place.
    return plan.units.length === tooLarge.length;
  }

  /** Whether the server accepts a TCP connection (the keys are checked by every apply, per zone). */
  async health(): Promise<{ ok: boolean; message: string }> {
    const error = await new Promise<Error | undefined>((resolve) => {
      const socket = net.connect({ host: this.settings.server, port: this.settings.port ?? DEFAULT_PORT });
      const timer = setTimeout(() => {
        socket.destroy();
        resolve(new Error(`no connection within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.destroy();
        resolve(undefined);
      });
      socket.once('error', (e) => {
        clearTimeout(timer);
        resolve(e);
      });
    });
    if (error)
      throw new BackendError('BackendUnreachable', `RFC 2136 primary at ${this.where}: ${error.message}`, {
        code: 'RFC2136_UNREACHABLE',
      });
    return { ok: true, message: `RFC 2136 primary at ${this.where} accepts TCP connections` };
  }

  // -------------------------------------------------------------------------------------------------

  private async target(): Promise<UpdateTarget> {
    return {
      host: this.settings.server,
      port: this.settings.port ?? DEFAULT_PORT,
      key: await this.key('tsigKey'),
      timeoutMs: this.timeoutMs,
    };
  }

  /** Sends the messages in order; stops at a failed prerequisite (`replan`), throws on refusal. */
  private async send(
    target: UpdateTarget,
    origin: Name,
    messages: readonly UpdateUnit[][],
  ): Promise<{ replan: false; messages: number } | { replan: true; rcode: number; messages: number }> {
    let count = 0;
    for (const units of messages) {
      const outcome = await sendUpdate(target, origin, units);
      count++;
      if (outcome.ok) continue;
      if (outcome.kind === 'prerequisite') return { replan: true, rcode: outcome.rcode, messages: count };
      if (outcome.kind === 'unreachable')
        throw new BackendError(
          'BackendUnreachable',
          `UPDATE of ${origin} at ${this.where}: ${outcome.message}`,
          {
            code: 'RFC2136_UNREACHABLE',
          },
        );
      throw this.refusal(origin, target.key.name, outcome.rcode, outcome.tsigError);
    }
    return { replan: false, messages: count };
  }

  private refusal(origin: Name, keyName: string, rcode: number, tsigError: number | undefined): BackendError {
    const answered = `the server at ${this.where} answered the UPDATE of ${origin} with ${rcodeName(rcode)}`;
    if (tsigError !== undefined) {
      const name = tsigErrorName(tsigError);
      const why =
        name === 'BADKEY'
          ? `it does not know key ${keyName} (or not with this algorithm), or does not allow it to update ${origin} (Knot answers BADKEY to a key no acl with action update grants)`
          : name === 'BADSIG'
            ? `the signature does not verify: the secret of ${keyName} differs from the server's`
            : name === 'BADTIME'
              ? 'the clocks of Zonekeeper and the server differ by more than the TSIG fudge (300 s)'
              : 'the server rejected the TSIG signature';
      return new BackendError(
        'BackendRejected',
        `${answered}, TSIG error ${name}: ${why}; set spec.backend.rfc2136.tsigKey to the key the server has (RFC 8945 §5.2)`,
        { code: 'RFC2136_TSIG' },
      );
    }
    const fix =
      rcode === Rcode.REFUSED
        ? `allow key ${keyName} to update ${origin} (Knot: an acl with action update and key ${keyName} on the zone; BIND: update-policy { grant ${keyName.replace(/\.$/, '')} zonesub ANY; }), or see the server log for content it refused (BIND's integrity checks refuse an UPDATE that leaves an in-zone NS or MX target without an address record: give those names A/AAAA record sets)`
        : rcode === Rcode.NOTAUTH
          ? `the server is not a primary for ${origin}; point spec.backend.rfc2136.server at the zone's primary`
          : rcode === Rcode.NOTIMP
            ? 'the server does not implement UPDATE for this zone (a secondary that does not forward it?); point spec.backend.rfc2136.server at the primary'
            : rcode === Rcode.SERVFAIL
              ? 'the server failed to apply it; see its log (the change is retried)'
              : 'see the server log';
    return new BackendError('BackendRejected', `${answered}: ${fix}`, {
      code: `RFC2136_${rcodeName(rcode)}`,
    });
  }

  /** Problems for the RRsets of a unit that fits no message. */
  private tooLarge(unit: UpdateUnit, desired: readonly RRset[]): RRsetProblem[] {
    return desired
      .filter((r) => nameEquals(r.owner, unit.owner))
      .map((r) => ({
        owner: r.owner,
        type: r.type,
        origin: r.origin,
        reason: 'BackendRejected' as const,
        message: `the changes at ${nameKey(unit.owner)} need an UPDATE message larger than the limit (65535 octets over TCP, RFC 1035 §4.2.2); make the RRsets at this name smaller`,
      }));
  }
}

/** An RRset the server holds, as plan --live shows it (RFC 3597 §5 form for types without a name). */
function heldLive(h: HeldRRset): LiveRRset {
  const print = (r: Rdata | UnknownRdata) =>
    typeof r.type === 'string' ? printRdata(r as Rdata) : printUnknownRdata(r as UnknownRdata);
  return {
    owner: h.owner,
    type: recordTypeOfCode(h.type) ?? `TYPE${h.type}`,
    ttl: h.ttl,
    records: h.rdata.map(print).sort(),
  };
}
