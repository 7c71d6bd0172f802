/**
 * What a front door (the homelab DNS API, an ExternalDNS webhook provider, RFC 2136 UPDATE) hands to
 * the record writer once it has authenticated its caller: a credential name and a request of RRset
 * changes, applied all or none. Pure types and the stable error codes.
 */
import type { RecordTypeName } from '../dns/rrtype.ts';

/** The label on every record set written through an API; its value is the credential's name. */
export const WRITTEN_BY_LABEL = 'dns.zonekeeper.dev/written-by';

/** The only annotations a write may set on its record set (`RecordChange.annotations`). */
export const WRITE_ANNOTATION_PREFIX = 'write.dns.zonekeeper.dev/';

/**
 * One change of one RRset. `name` is absolute (trailing dot); front doors turn their own forms
 * ("subdomain" + "domain", an ExternalDNS endpoint's dnsName, an UPDATE's owner name) into it.
 * Record values are in RFC 1035 presentation format; relative names in them are relative to the zone
 * that adopts the RRset.
 */
export type RecordChange = (
  | {
      op: 'upsert';
      name: string;
      type: RecordTypeName;
      ttl?: number;
      records: string[];
      /**
       * What the front door keeps beside the RRset, as annotations of its record set: keys under
       * `WRITE_ANNOTATION_PREFIX` only (an ExternalDNS endpoint's set identifier, labels and
       * provider-specific properties), listed back with it. Part of the content: a change of them is
       * an update.
       */
      annotations?: Record<string, string>;
    }
  | { op: 'delete'; name: string; type: RecordTypeName }
) & {
  /**
   * Refuse (`NOT_OWNER`) when another object — a manifest's or a tenant's record set under another
   * object name, or the zone for its SOA and apex NS — defines this name and type, instead of storing
   * the change beside it to lose the conflict (RFC 2136 UPDATE: an UPDATE never shadows what it does
   * not own).
   */
  exclusive?: boolean;
  /**
   * Compare-and-set: the content of this name and type's API-written RRset the caller based the change
   * on — its TTL and records, or `'absent'` when there was none. The writer refuses the whole request
   * (`PRECONDITION_FAILED`) when what it holds for the RRset differs, instead of overwriting a change it
   * applied meanwhile (RFC 2136 UPDATE evaluated on a replica whose served view may lag the leader).
   */
  expect?: RRsetContent | 'absent';
};

/** The content of one RRset as compared by `RecordChange.expect`. */
export interface RRsetContent {
  ttl: number;
  records: string[];
}

export interface WriteRequest {
  /**
   * Names this request for replays (an HMAC nonce, a TSIG-signed message's ID and time, an HTTP
   * Idempotency-Key): the same id with the same changes is answered with the first result and applied
   * once; the same id with other changes is refused (`REPLAYED`). Printable ASCII, at most 128 characters.
   */
  id?: string;
  changes: RecordChange[];
}

export type ChangeOutcome = 'created' | 'updated' | 'unchanged' | 'deleted' | 'absent';

export interface WriteResult {
  /** The namespace the credential writes to. */
  namespace: string;
  /** True when the request id was seen before with these changes: nothing was applied again. */
  replayed: boolean;
  changes: { name: string; type: RecordTypeName; object: string; outcome: ChangeOutcome }[];
}

export type WriteErrorCode =
  /** The credential is not in the credential table. */
  | 'UNKNOWN_CREDENTIAL'
  /** Too many changes, records or bytes in one request. */
  | 'REQUEST_TOO_LARGE'
  /** A change that is not a valid RRset (name, type, TTL, records). */
  | 'INVALID_CHANGE'
  /** Two changes of one request touch the same name and type. */
  | 'DUPLICATE_CHANGE'
  /** No served zone contains the name, or its zone does not delegate it to the credential's namespace. */
  | 'NOT_DELEGATED'
  /** The record set exists and belongs to a manifest, a tenant's own object or another credential. */
  | 'NOT_OWNER'
  /**
   * The name holds an older RRset the type cannot coexist with (a CNAME beside other data, an ALIAS
   * beside A or AAAA, RFC 1034 §3.6.2): the zone would serve the older one and never this one.
   */
  | 'NAME_CONFLICT'
  /** The namespace would hold more API-written record sets than its quota allows. */
  | 'QUOTA_EXCEEDED'
  /** The namespace sent more requests than its rate allows. */
  | 'RATE_LIMITED'
  /** The request id was used before with other changes. */
  | 'REPLAYED'
  /**
   * A change's `expect` differs from the RRset the writer holds: it changed since the caller read it.
   * Nothing was applied; read again and decide anew.
   */
  | 'PRECONDITION_FAILED'
  /** The store could not make the request durable; it may still complete: retry with the same id. */
  | 'UNAVAILABLE';

export class WriteError extends Error {
  readonly code: WriteErrorCode;
  /** The change at fault (index into `changes`), when one is. */
  readonly change?: number;
  /** For RATE_LIMITED: when a retry can succeed. */
  readonly retryAfterSeconds?: number;

  constructor(
    code: WriteErrorCode,
    message: string,
    extra: { change?: number; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'WriteError';
    this.code = code;
    if (extra.change !== undefined) this.change = extra.change;
    if (extra.retryAfterSeconds !== undefined) this.retryAfterSeconds = extra.retryAfterSeconds;
  }
}

/** Per-namespace quota of API writes. */
export interface NamespaceQuota {
  /** API-written record sets the namespace may hold (all its credentials together). */
  maxRecordSets: number;
  /** Sustained requests per second. */
  requestsPerSecond: number;
  /** Requests that may come at once after a quiet period. */
  burst: number;
}

/** Bounds of one request: they hold whatever the quota says (a request is held in memory whole). */
export interface RequestLimits {
  maxChanges: number;
  /** Records over all changes of a request. */
  maxRecords: number;
  /** The request's size: names, types and record texts (UTF-8), as a front door's body limit. */
  maxBytes: number;
}

export const DEFAULT_QUOTA: NamespaceQuota = { maxRecordSets: 1000, requestsPerSecond: 5, burst: 20 };

/**
 * 256 KiB: a request and the replay record of it fit in one state line and, in a cluster, in one
 * write-journal ConfigMap (1 MiB) with room to spare.
 */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxChanges: 500,
  maxRecords: 5000,
  maxBytes: 256 * 1024,
};
