import type { DnssecStatus, EffectiveDnssec, IgnoreRule } from '../api/index.ts';
import type { Name } from '../dns/name.ts';
import type { ResourceKey } from '../zones/resource-key.ts';
import type { PublishedByName, RRset, RRsetDelta, RRsetProblem } from '../zones/rrset.ts';
import type { SoaFields } from '../zones/soa.ts';
import type { ResolvedTransfers } from '../zones/transfers.ts';

/** The content of a zone at a serial, and how it differs from the previous serial when known. */
export interface ProgrammedZone {
  key: ResourceKey;
  origin: Name;
  soa: SoaFields;
  serial: number;
  /** Transfer settings of the zone's class, secrets read (backends that serve DNS themselves use them). */
  transfers?: ResolvedTransfers;
  /** Every RRset but the SOA, in canonical order; computed on demand (O(zone)). */
  rrsets: () => Iterable<RRset>;
  /**
   * The same content looked up by owner name, where the zone is held that way (a zone model): a
   * backend that needs a few names of it (the overlay of a change) reads them here, not `rrsets()`.
   */
  byName?: PublishedByName;
  /**
   * The change from `fromSerial` to `serial`. A backend that holds the zone at exactly `fromSerial`
   * applies just this; any other backend state takes the full content.
   */
  delta?: RRsetDelta & { fromSerial: number };
  /**
   * The zone's ignore rules (`DNSZone.spec.ignore`; match them with `zones/ignore.ts`). A backend whose
   * target others can edit (an external server) must leave every RRset they match exactly as the target
   * holds it — never created, modified or deleted, whoever made it, even one it created before (and it
   * stops claiming such an RRset) — and report a desired RRset they match as a problem. The SOA is never
   * matched. A backend that holds nothing but Zonekeeper's content (the built-in server) ignores them.
   */
  ignore?: readonly IgnoreRule[];
  /**
   * The zone's DNSSEC settings when it is to be signed (`DNSZone.spec.dnssec` over its class's). Only a
   * backend whose capabilities include `dnssec` is given them; it signs the zone, or reports why not.
   */
  dnssec?: EffectiveDnssec;
  /**
   * With `dnssec`, for a backend that signs at the serial (`capabilities.dnssecAtSerial`): the signing
   * time recorded with this serial (seconds since the epoch, ADR 0021). Every signature window derives
   * from it, so every process signs the serial to the same bytes.
   */
  signedAt?: number;
  /**
   * The key tags this serial was signed with where another process recorded them (a `zonekeeper
   * server` replica: `status.dnssec.keys`). A backend whose keys differ fails the apply rather than
   * sign the serial with other keys than the other replicas.
   */
  keyTags?: readonly number[];
}

export type { RRsetProblem } from '../zones/rrset.ts';

/** What an apply leaves to report besides the serial (read back with `servedSerial`). */
export interface ApplyResult {
  /** RRsets left out; every other RRset is programmed. Empty or absent: the whole zone is. */
  problems?: readonly RRsetProblem[];
  /** How the backend signs the zone (keys, DS for the parent); absent for a zone that is not signed. */
  dnssec?: DnssecStatus;
  /**
   * A backend that signs at the serial: when its keys change state after this serial's signing time
   * (a rollover step recorded for then, seconds since the epoch). From then on the serial is stale and
   * the controller assigns a new one, signed at or after it.
   */
  keyEventAt?: number;
  /** When the backend asks to be applied again, to take its next rollover step (seconds since the epoch). */
  revisitAt?: number;
}

/**
 * What a backend can do, declared once per kind (src/backends/registry.ts) and carried by each of its
 * instances, so the controller asks the backend instead of branching on kinds.
 */
export interface BackendCapabilities {
  /**
   * Whose SOA serial the target serves. `authority`: exactly the serial Zonekeeper assigns (the
   * built-in server, PowerDNS). `own`: the target keeps its own SOA and serial (RFC 2136 servers).
   * `none`: the target has no SOA (webhook DNS providers). It decides what Programmed means
   * (`programmedBy`).
   */
  readonly serial: 'authority' | 'own' | 'none';
  /** Serves AXFR/IXFR and sends NOTIFY per the class's `transfers` (RFC 5936, 1995, 1996) itself. */
  readonly transfers: boolean;
  /** Serves ALIAS record sets (apex CNAME-like names answered as A/AAAA). */
  readonly alias: boolean;
  /** Can select a subset of an RRset per query (health or location steering). */
  readonly steering: boolean;
  /** Signs the zones it serves (DNSSEC, RFC 4033-4035). */
  readonly dnssec: boolean;
  /**
   * Signs deterministically at the signing time recorded with each serial (ADR 0021): the controller
   * records `signedAt` with the serial, passes it in `ProgrammedZone.signedAt`, and assigns a new
   * serial when signatures are due for refresh. Absent: the backend signs live (PowerDNS).
   */
  readonly dnssecAtSerial?: boolean;
  /** Others can edit the target: every apply reads it back and repairs drift (see resyncIntervalMs). */
  readonly driftRepair: boolean;
}

/**
 * How a backend confirms a zone is programmed, from its capabilities: the serial read back where the
 * backend serves Zonekeeper's serial, the content read back where the target keeps its own SOA or has
 * none.
 */
export function programmedBy(capabilities: BackendCapabilities): 'serial' | 'content' {
  return capabilities.serial === 'authority' ? 'serial' : 'content';
}

/** Whether a zone is Programmed, read back from the backend, with the message for the condition. */
export interface ReadBack {
  programmed: boolean;
  message: string;
}

/**
 * Reads back whether the backend serves `zone` (never a cached answer): the exact serial for a
 * serial authority, the content for the others (`servedContent`). A backend that should read content
 * back and cannot is a BackendError (UNSUPPORTED_READ_BACK), never Programmed.
 */
export async function readBack(
  backend: Backend,
  zone: Pick<ProgrammedZone, 'origin' | 'serial' | 'soa' | 'rrsets' | 'ignore'>,
): Promise<ReadBack> {
  if (programmedBy(backend.capabilities) === 'serial') {
    const served = await backend.servedSerial(zone.origin);
    return served === zone.serial
      ? { programmed: true, message: `${backend.name} serves serial ${zone.serial}` }
      : {
          programmed: false,
          message: `${backend.name} serves serial ${served ?? 'nothing'}, expected ${zone.serial}`,
        };
  }
  if (backend.servedContent === undefined) {
    throw new BackendError(
      'BackendRejected',
      `backend ${backend.name} keeps its own SOA serial but cannot read the content back (servedContent); it cannot report Programmed`,
      { code: 'UNSUPPORTED_READ_BACK' },
    );
  }
  return (await backend.servedContent(zone))
    ? { programmed: true, message: `${backend.name} serves the content of serial ${zone.serial}` }
    : {
        programmed: false,
        message: `${backend.name} does not serve the content of serial ${zone.serial} yet`,
      };
}

/**
 * What a reconciler needs from an authoritative backend. Implementations must be idempotent: applying
 * the same zone twice is a no-op, deleting a missing zone succeeds. The contract kit
 * (src/backends/contract) checks every backend against this.
 */
/** Zone changes sent to one backend at once when it does not say (`Backend.applyConcurrency`). */
export const DEFAULT_APPLY_CONCURRENCY = 8;

export interface Backend {
  readonly name: string;
  readonly capabilities: BackendCapabilities;
  // biome-ignore lint/suspicious/noConfusingVoidType: a backend with nothing to report returns nothing
  applyZone(zone: ProgrammedZone): Promise<ApplyResult | void>;
  /**
   * When set, every programmed zone is applied again this often even when nothing changed, so a
   * backend that others can edit (PowerDNS) reads its state back and repairs drift.
   */
  readonly resyncIntervalMs?: number;
  deleteZone(origin: Name): Promise<void>;
  /**
   * A backend that signs at the serial: whether the zone's signing is being turned off and not over
   * (RFC 8078 §4, the state recorded with its keys), for a zone whose status does not say (lost, as
   * `zonekeeper serve`'s statuses are at a restart). Such a zone stays signed as it goes insecure.
   */
  signingTurnedOff?(origin: Name): Promise<boolean>;
  /** The serial the backend actually serves for the zone, undefined when it does not serve it. */
  servedSerial(origin: Name): Promise<number | undefined>;
  /**
   * Whether the target serves exactly the zone's content (its own SOA aside), read back. Required
   * where `capabilities.serial` is not `authority` (see `readBack`). RRsets the zone's ignore rules
   * match are left out of the comparison.
   */
  servedContent?(
    zone: Pick<ProgrammedZone, 'origin' | 'serial' | 'soa' | 'rrsets' | 'ignore'>,
  ): Promise<boolean>;
  /** Whether the backend is reachable and healthy (shown on the DNSZoneClass; never blocks zones). */
  health?(): Promise<{ ok: boolean; message: string }>;
  /**
   * Reads the zone's current content from the target itself and compares it with `zone` as an apply
   * would (`LiveDiff`), changing nothing. Backends whose target others can edit (`driftRepair`)
   * implement it; `zonekeeper plan --live` says "cannot be read" for one that does not.
   */
  liveDiff?(zone: ProgrammedZone): Promise<LiveDiff>;
  /**
   * How many zones' changes (an apply and its read-back) this backend is sent at once (default
   * `DEFAULT_APPLY_CONCURRENCY`, also for a number below 1), however many zones the controller
   * reconciles at once. The limit is per backend: one per zone class and target, so two classes
   * naming one server may each send that many. The built-in backend applies within this process and
   * takes every one at once.
   */
  readonly applyConcurrency?: number;
  /** The target for people (`PowerDNS at URL (server ID)`), shown by plan --live. */
  readonly location?: string;
  /**
   * The target keeps serving each zone's last programmed content while this process is down and
   * after it starts again: a server of its own (PowerDNS, an RFC 2136 primary, a webhook's provider)
   * or `zonekeeper server` replicas reading the API. Only then is a change made while this process
   * was down held by change safety (ADR 0018): holding it cannot leave the zone unserved. Absent or
   * false: what is served lives in this process (`zonekeeper serve`'s built-in server), which serves
   * nothing of a zone after a restart until it programs it.
   */
  readonly keepsServing?: boolean;
}

/** One RRset as a backend holds it or would be made to hold it, records in the backend's own spelling. */
export interface LiveRRset {
  owner: Name;
  /** The type's name (`TYPE65534` for a type Zonekeeper has no name for, RFC 3597 §5). */
  type: string;
  ttl: number;
  /** The records, sorted; a record the backend holds disabled ends in ` (disabled)`. */
  records: string[];
}

/**
 * A zone's content read from the backend itself, compared with the zone Zonekeeper computed
 * (`zonekeeper plan --live`): what an apply of that zone would add, change and delete there, and
 * what it leaves alone. Read only; decided by the backend's own apply rules (ownership, ignore rules).
 */
export interface LiveDiff {
  /** Whether the backend holds the zone now (an apply would create it when not). */
  exists: boolean;
  add: LiveRRset[];
  change: { owner: Name; type: string; before: LiveRRset; after: LiveRRset }[];
  delete: LiveRRset[];
  /** RRsets the backend holds that Zonekeeper does not own: never modified or deleted. */
  notOwned: LiveRRset[];
  /** RRsets the backend holds that the zone's ignore rules match: left as they are, whoever made them. */
  ignored: LiveRRset[];
  /** Desired RRsets an apply would leave out (a Conflict with what the backend holds, a refusal). */
  problems: RRsetProblem[];
  /** What the read cannot see (a protocol that cannot list a zone), shown with the diff. */
  notes?: string[];
}

/** A backend failure with a stable reason for conditions (e.g. BackendUnreachable), and a code. */
export class BackendError extends Error {
  readonly reason: 'BackendUnreachable' | 'BackendRejected';
  /** A stable code for the failure, e.g. UNKNOWN_BACKEND; absent where the reason says it all. */
  readonly code: string | undefined;

  constructor(
    reason: 'BackendUnreachable' | 'BackendRejected',
    message: string,
    options?: { cause?: unknown; code?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BackendError';
    this.reason = reason;
    this.code = options?.code;
  }
}
