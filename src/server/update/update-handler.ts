/**
 * RFC 2136 UPDATE into the built-in server: authenticates the message (TSIG, RFC 8945, with the
 * zone's update keys), applies the zone's update policy, evaluates prerequisites and updates against
 * what is served (update-eval.ts), and hands the changed RRsets to the record writer as one request —
 * the common path of API-written records (ADR 0016): all or none, durable before the answer, and in a
 * cluster forwarded to the operator's leader as RFC 2136 §6 forwards to the primary. The checks that
 * need no write are made at once; authenticated messages are then handled one at a time per zone
 * (RFC 2136 §3.7), each answered once what it wrote is served, so the next one's prerequisites see it.
 */
import { createHash } from 'node:crypto';
import { decodeMessage, type Message, Opcode, Rcode } from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { printRdata, type Rdata, rdataEquals } from '../../dns/rdata.ts';
import { type RecordTypeName, RRClass, RRType } from '../../dns/rrtype.ts';
import {
  readTsig,
  SERVER_FUDGE_S,
  signMessage,
  type TsigVerified,
  tsigErrorResponse,
  verifyMessage,
} from '../../dns/tsig.ts';
import { WireWriter } from '../../dns/wire.ts';
import type { Counter, Registry } from '../../metrics/registry.ts';
import { type RecordWriter, writtenObjectName } from '../../writes/record-writer.ts';
import { updateCredentialName } from '../../writes/update-credentials.ts';
import { type RecordChange, WriteError } from '../../writes/write-request.ts';
import { updateAllowed, updateKeyListed } from '../../zones/update-policy.ts';
import { parseQuery, type Query, type QueryEdns } from '../query.ts';
import { encodeResponse, errorParts } from '../response.ts';
import type { ServedZone, ZoneTable } from '../zone-table.ts';
import { evaluateUpdate, type RRsetChange, UpdateRcode, type UpdateZoneView } from './update-eval.ts';

/** What the DNS server hands an UPDATE to: this handler, or in a DNS worker the primary's over IPC. */
export interface UpdateResponder {
  handle(request: Uint8Array, remote: string | undefined): Promise<Uint8Array | null>;
}

/** Whether a message is a request with opcode UPDATE. */
export function isUpdate(message: Uint8Array): boolean {
  return message.length >= 12 && (message[2]! & 0x80) === 0 && ((message[2]! >> 3) & 0xf) === Opcode.UPDATE;
}

export interface UpdateHandlerOptions {
  /** The record writer (undefined while there is none: the UPDATE gets SERVFAIL). */
  writer: () => RecordWriter | undefined;
  registry?: Registry;
  /** Seconds since the epoch (TSIG time checks). */
  now?: () => number;
  /** How long an answer waits for what it wrote to be served (default 10 s); it answers NOERROR after. */
  settleMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  /** Authenticated UPDATEs that may wait for a write at once (default MAX_PENDING_UPDATES). */
  maxPending?: number;
  /** Of those, how many one zone's may be (default MAX_PENDING_PER_ZONE). */
  maxPendingPerZone?: number;
  /** Of those, how many one TSIG key's may be, over all zones (default MAX_PENDING_PER_KEY). */
  maxPendingPerKey?: number;
  /**
   * Why the record set `object` (namespace/name) is not served, when the zone has judged its current
   * version and refused it (its Accepted condition): an UPDATE that wrote it is answered SERVFAIL with
   * that reason at once, instead of waiting `settleMs` for what will never be served.
   */
  rejected?: (object: string) => string | undefined;
}

/**
 * How long what a signed message signed is remembered: the whole window a message is accepted in,
 * time signed ± the fudge, which `maxFudge` caps at the server's own (RFC 8945 §5.2.3, §10: 300 s).
 * A message is first seen no earlier than its time signed - fudge, and is refused as BADTIME after its
 * time signed + fudge, so it cannot come back once forgotten.
 */
const REPLAY_WINDOW_S = 2 * SERVER_FUDGE_S;
const MAX_REMEMBERED_MACS = 100_000;
/** Authenticated UPDATEs waiting for their zone's write, over all zones; more are REFUSED. */
export const MAX_PENDING_UPDATES = 128;
/**
 * Of those, one zone's at most: a zone whose writes are slow cannot take the others' share. Half of
 * the whole, so that a client's burst for one zone (an ACME client asking for dozens of certificates
 * at once; nsupdate does not retry a REFUSED) goes through.
 */
export const MAX_PENDING_PER_ZONE = 64;
/** Of those, one TSIG key's at most (a key may be listed by many zones). */
export const MAX_PENDING_PER_KEY = 64;

/** An authenticated UPDATE waiting for its zone's queue. */
interface Admitted {
  originKey: string;
  origin: Name;
  message: Message;
  keyName: string;
  /** The key's name as the per-key cap counts it (lower case). */
  keyId: string;
  /** What was signed (signedDigest): the replay memory's and the record writer's request id. */
  digest: string;
  answer: (rcode: number, result: string, why?: string) => Uint8Array;
}

/**
 * A digest of what a TSIG signed (RFC 8945 §4.3): key name, time signed, and the message as it was
 * before the TSIG was added, with its original ID. Independent of the MAC's length and of the ID a
 * copy carries in its header, both of which anyone can change without breaking the signature.
 */
export function signedDigest(verified: Pick<TsigVerified, 'stripped' | 'tsig' | 'key'>): string {
  const message = Buffer.from(verified.stripped);
  message.writeUInt16BE(verified.tsig.originalId, 0);
  return createHash('sha256')
    .update(`${verified.key.name}\0${verified.key.algorithm}\0${verified.tsig.timeSigned}\0`)
    .update(message)
    .digest('hex');
}

export class UpdateHandler implements UpdateResponder {
  private readonly table: ZoneTable<ServedZone>;
  private readonly options: UpdateHandlerOptions;
  private readonly now: () => number;
  private readonly updates?: Counter;
  /** Per zone (origin key): the tail of its queue of authenticated UPDATEs. */
  private readonly zoneQueues = new Map<string, Promise<void>>();
  private pending = 0;
  private readonly pendingByZone = new Map<string, number>();
  private readonly pendingByKey = new Map<string, number>();
  /** Set by `stop`: queued UPDATEs are answered at once and nothing waits for a write to be served. */
  private stopping = false;
  /** Answers (SERVFAIL) for the UPDATEs waiting now, for `stop`. */
  private readonly abandon = new Set<() => void>();
  /** Digests of what signed UPDATEs signed, with when: a replay inside the TSIG window is refused. */
  private readonly seen = new Map<string, number>();

  constructor(table: ZoneTable<ServedZone>, options: UpdateHandlerOptions) {
    this.table = table;
    this.options = options;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.updates = options.registry?.counter(
      'zonekeeper_updates_total',
      'RFC 2136 UPDATE messages, by result (the RCODE name, or replayed, overloaded, rate_limited, badkey, badsig, badtime, unsigned).',
      ['result'],
    );
  }

  /**
   * Everything that needs no write — framing, zone, policy, TSIG, replay — is answered at once, outside
   * any queue, so that unauthenticated traffic never waits behind (or piles up behind) a slow write.
   * Only an authenticated message is queued, in its zone's queue (RFC 2136 §3.7: serialized per zone;
   * zones do not wait for each other), and at most `maxPending` of them wait at a time.
   */
  handle(request: Uint8Array, remote: string | undefined): Promise<Uint8Array | null> {
    let admitted: Admitted | Uint8Array | null;
    try {
      admitted = this.admit(request, remote);
    } catch (e) {
      return Promise.reject(e);
    }
    if (admitted === null || admitted instanceof Uint8Array) return Promise.resolve(admitted);
    const work = admitted;
    const shuttingDown = () => work.answer(UpdateRcode.SERVFAIL, 'SERVFAIL', 'the server is shutting down');
    if (this.stopping) return Promise.resolve(shuttingDown());
    this.pending++;
    bump(this.pendingByZone, work.originKey, 1);
    bump(this.pendingByKey, work.keyId, 1);
    let answerNow!: (bytes: Uint8Array) => void;
    const abandoned = new Promise<Uint8Array>((resolve) => {
      answerNow = resolve;
    });
    const abandon = () => answerNow(shuttingDown());
    this.abandon.add(abandon);
    const tail = this.zoneQueues.get(work.originKey) ?? Promise.resolve();
    const run = tail.then(() => (this.stopping ? shuttingDown() : this.write(work)));
    const settled = run.then(
      () => {},
      () => {},
    );
    this.zoneQueues.set(work.originKey, settled);
    void settled.then(() => {
      this.pending--;
      bump(this.pendingByZone, work.originKey, -1);
      bump(this.pendingByKey, work.keyId, -1);
      this.abandon.delete(abandon);
      if (this.zoneQueues.get(work.originKey) === settled) this.zoneQueues.delete(work.originKey);
    });
    return Promise.race([run, abandoned]);
  }

  /**
   * Shutting down: every UPDATE still waiting is answered SERVFAIL now (one whose write is in flight
   * too; the client retries against the next server), later ones at once, and no wait for a write to
   * be served goes on. Nothing of this handler holds the process up afterwards.
   */
  stop(): void {
    this.stopping = true;
    for (const abandon of [...this.abandon]) abandon();
    this.abandon.clear();
  }

  /** UPDATEs authenticated and waiting for (or in) their zone's write; for tests and metrics. */
  get pendingWrites(): number {
    return this.pending;
  }

  private count(result: string): void {
    this.updates?.labels(result).inc();
  }

  /** The checks that need no write: an answer, or an authenticated message for its zone's queue. */
  private admit(request: Uint8Array, remote: string | undefined): Admitted | Uint8Array | null {
    if (!isUpdate(request)) return null;
    // The framing, the zone section and the OPT, read as for a query (FORMERR echoes what was read).
    const framed = parseQuery(request, Opcode.UPDATE);
    if (framed.kind === 'drop') return null;
    if (framed.kind === 'error') {
      this.count('FORMERR');
      const { id, opcode, rd } = framed;
      return reply(framed.question ?? { id, opcode, rd, cd: false }, UpdateRcode.FORMERR, framed.edns);
    }
    const q = framed.query;
    const edns = q.edns;
    // RFC 6891 §6.1.3: EDNS version 0 only.
    if (edns && edns.version !== 0) {
      this.count('BADVERS');
      return reply(q, Rcode.BADVERS, edns);
    }
    let found: ReturnType<typeof readTsig>;
    let message: Message;
    try {
      found = readTsig(request);
      message = decodeMessage(found?.stripped ?? request);
    } catch {
      this.count('FORMERR');
      return reply(q, UpdateRcode.FORMERR, edns);
    }
    // §3.1.1: exactly one zone (RFC 9619's one question, checked above), of type SOA.
    const zoneRR = message.questions[0]!;
    if (zoneRR.type !== RRType.SOA) {
      this.count('FORMERR');
      return reply(q, UpdateRcode.FORMERR, edns);
    }
    // §3.1.2: a zone we are not authoritative for: NOTAUTH.
    const zone = zoneRR.class === RRClass.IN ? this.table.get(zoneRR.name) : undefined;
    if (!zone || zone.originKey !== nameKey(zoneRR.name)) {
      this.count('NOTAUTH');
      return reply(q, UpdateRcode.NOTAUTH, edns);
    }
    // A zone without an update policy takes no UPDATE, signed or not.
    if (!zone.transfers?.update) {
      this.count('REFUSED');
      return reply(q, UpdateRcode.REFUSED, edns);
    }
    const policy = zone.transfers;
    // TSIG is required: an unsigned UPDATE changes nothing.
    if (!found) {
      this.count('unsigned');
      return reply(q, UpdateRcode.REFUSED, edns);
    }
    const now = this.now();
    // RFC 8945 §5.2.2.1 lets a server require the full MAC: UPDATE does (BADTRUNC), since the MAC
    // length is not signed and every allowed prefix of a captured MAC would verify as well.
    const verified = verifyMessage(request, policy?.updateKeys ?? (() => undefined), {
      now,
      requireFullMac: true,
      // The sender's fudge counts up to the server's: past the replay memory, a message is BADTIME.
      maxFudge: SERVER_FUDGE_S,
    });
    if (!verified.ok) {
      this.count(verified.error.toLowerCase());
      this.options.log?.('info', 'refused an UPDATE: TSIG failed', {
        zone: zone.origin,
        remote,
        error: verified.error,
      });
      return tsigErrorResponse(request, verified, { now }) ?? reply(q, UpdateRcode.NOTAUTH, edns);
    }
    const key = verified.key;
    const answer = (rcode: number, result: string, why?: string) => {
      this.count(result);
      if (why)
        this.options.log?.('info', 'refused an UPDATE', { zone: zone.origin, key: key.name, remote, why });
      return signMessage(reply(q, rcode, edns), key, { time: this.now(), requestMac: verified.mac }).bytes;
    };
    // A signed message replayed inside the TSIG window (RFC 8945 §5.2.3 lets it pass the time check).
    // Remembered by what was signed, not by the MAC as received: a MAC's form (its length) is not
    // signed, so a key on the MAC bytes would let an altered copy of a captured message pass.
    const digest = signedDigest(verified);
    this.forgetOld(now);
    if (this.seen.has(digest))
      return answer(UpdateRcode.REFUSED, 'replayed', 'a replay of a message seen before');
    const update = policy?.update;
    if (!update || !updateKeyListed(update.rules, key.name))
      return answer(UpdateRcode.REFUSED, 'REFUSED', `the zone's updatePolicy does not name key ${key.name}`);
    // Bounded: past the cap the message is refused unrecorded, so the same bytes may be sent again.
    // A zone, or a key, whose writes are slow holds at most its share: other zones' UPDATEs still go
    // through (RFC 2136 §3.7 serializes per zone; zones do not wait for each other).
    const keyId = key.name.toLowerCase();
    if (this.pending >= (this.options.maxPending ?? MAX_PENDING_UPDATES))
      return answer(UpdateRcode.REFUSED, 'overloaded', 'too many UPDATEs are waiting to be written');
    if (
      (this.pendingByZone.get(zone.originKey) ?? 0) >=
      (this.options.maxPendingPerZone ?? MAX_PENDING_PER_ZONE)
    )
      return answer(
        UpdateRcode.REFUSED,
        'overloaded',
        `too many UPDATEs to zone ${zone.origin} are waiting to be written; retry later`,
      );
    if ((this.pendingByKey.get(keyId) ?? 0) >= (this.options.maxPendingPerKey ?? MAX_PENDING_PER_KEY))
      return answer(
        UpdateRcode.REFUSED,
        'overloaded',
        `too many UPDATEs signed with key ${key.name} are waiting to be written; retry later`,
      );
    this.seen.set(digest, now);
    return {
      originKey: zone.originKey,
      origin: zone.origin,
      message,
      keyName: key.name,
      keyId,
      digest,
      answer,
    };
  }

  /**
   * In the zone's queue: prerequisites and updates against what is served now, then the write. Each
   * change carries the RRset it was evaluated against (`expect`); in a cluster the leader may hold
   * newer content than this replica serves (another replica's UPDATE), and refuses the request
   * (PRECONDITION_FAILED). The message is then evaluated once more, after this replica's view has
   * caught up (bounded wait): its prerequisites may now fail (their RCODE), or it is written against
   * the fresher content. A second refusal is answered SERVFAIL, so the client retries.
   */
  private async write(work: Admitted): Promise<Uint8Array> {
    const { answer, keyName, message, digest } = work;
    for (let attempt = 1; ; attempt++) {
      if (this.stopping) return answer(UpdateRcode.SERVFAIL, 'SERVFAIL', 'the server is shutting down');
      // The zone as served now: earlier UPDATEs to it have been written and are served.
      const zone = this.table.get(work.origin);
      const update = zone?.originKey === work.originKey ? zone.transfers?.update : undefined;
      if (!zone || !update || !updateKeyListed(update.rules, keyName))
        return answer(UpdateRcode.REFUSED, 'REFUSED', 'the zone or its updatePolicy changed meanwhile');
      const writer = this.options.writer();
      const credential = updateCredentialName(update.namespace, keyName);
      // The namespace's write rate applies to every authenticated UPDATE, refused ones included: one
      // whose rate is spent is not evaluated, and one refused before the write takes its share.
      const wait = attempt === 1 ? (writer?.rateWait?.(credential) ?? 0) : 0;
      if (wait > 0)
        return answer(
          UpdateRcode.REFUSED,
          'rate_limited',
          `RATE_LIMITED: namespace ${update.namespace} sent too many write requests; retry after ${Number.isFinite(wait) ? `${wait} s` : 'a quota change'}`,
        );
      const view = zoneView(this.table, zone);
      const decision = evaluateUpdate(message, view, (fqdn, type) =>
        updateAllowed(update.rules, zone.origin, keyName, fqdn, type),
      );
      if (!decision.ok || decision.changes.length === 0) {
        if (attempt === 1) writer?.charge?.(credential);
        if (!decision.ok) return answer(decision.rcode, rcodeName(decision.rcode), decision.reason);
        return answer(UpdateRcode.NOERROR, 'NOERROR');
      }
      if (!writer) return answer(UpdateRcode.SERVFAIL, 'SERVFAIL', 'no record writer is running');
      const changes = decision.changes.map((c) => toChange(c, view));
      try {
        const result = await writer.apply(credential, { id: `tsig-${digest}`, changes });
        // Another replica (or this one before a restart) applied this very message already.
        if (result.replayed)
          return answer(UpdateRcode.REFUSED, 'replayed', 'a replay of a message applied before');
      } catch (e) {
        const code = e instanceof WriteError ? e.code : 'UNAVAILABLE';
        if (code === 'PRECONDITION_FAILED' && attempt === 1) {
          this.options.log?.('info', 'an UPDATE met newer content at the writer; evaluating it again', {
            zone: zone.origin,
          });
          await this.caughtUp(zone.origin, changes, update.namespace);
          continue;
        }
        const rcode =
          code === 'UNAVAILABLE' || code === 'PRECONDITION_FAILED'
            ? UpdateRcode.SERVFAIL
            : UpdateRcode.REFUSED;
        return answer(rcode, rcodeName(rcode), `${code}: ${(e as Error).message}`);
      }
      const refused = await this.settled(zone.origin, decision.changes, update.namespace);
      if (refused)
        return answer(
          UpdateRcode.SERVFAIL,
          'SERVFAIL',
          `the record writer stored it, but the zone does not serve it: ${refused}`,
        );
      return answer(UpdateRcode.NOERROR, 'NOERROR');
    }
  }

  /**
   * Waits (bounded, as `settled`) until the served zone no longer shows what some change expected:
   * the newer content the writer holds has reached this replica.
   */
  private async caughtUp(origin: Name, changes: readonly RecordChange[], namespace: string): Promise<void> {
    const deadline = Date.now() + (this.options.settleMs ?? 10_000);
    for (;;) {
      const zone = this.table.get(origin);
      if (!zone || changes.some((c) => !showsExpected(zone, c))) return;
      // What the writer holds is refused by the zone: the served content will not change.
      if (this.stopping || Date.now() >= deadline || this.refusedOf(namespace, changes) !== undefined) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private forgetOld(now: number): void {
    for (const [mac, at] of this.seen) {
      if (now - at <= REPLAY_WINDOW_S && this.seen.size < MAX_REMEMBERED_MACS) break;
      this.seen.delete(mac);
    }
  }

  /** Why the zone refuses one of the record sets these changes write, if it has judged them. */
  private refusedOf(
    namespace: string,
    changes: readonly Pick<RRsetChange, 'owner' | 'type'>[] | readonly RecordChange[],
  ): string | undefined {
    const rejected = this.options.rejected;
    if (!rejected) return undefined;
    for (const c of changes) {
      const owner = 'owner' in c ? c.owner : c.name;
      const why = rejected(`${namespace}/${writtenObjectName(owner, c.type as RecordTypeName)}`);
      if (why !== undefined) return `${owner} ${c.type}: ${why}`;
    }
    return undefined;
  }

  /**
   * Waits (bounded) until the served zone shows every change: the next UPDATE's prerequisites see it.
   * Returns why not, at once, when the zone refused what was written (it will never be served).
   */
  private async settled(
    origin: Name,
    changes: readonly RRsetChange[],
    namespace: string,
  ): Promise<string | undefined> {
    const deadline = Date.now() + (this.options.settleMs ?? 10_000);
    for (;;) {
      const zone = this.table.get(origin);
      if (zone && changes.every((c) => shows(zone, c))) return undefined;
      const refused = this.refusedOf(
        namespace,
        changes.filter((c) => c.rdata.length > 0),
      );
      if (refused !== undefined) return refused;
      if (this.stopping) return undefined;
      if (Date.now() >= deadline) {
        this.options.log?.('warn', 'an applied UPDATE is not served yet; answering NOERROR', {
          zone: origin,
        });
        return undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

function shows(zone: ServedZone, change: RRsetChange): boolean {
  const served = zone.node(nameKey(change.owner))?.rrsets.get(RRType[change.type as keyof typeof RRType]);
  if (change.rdata.length === 0) return served === undefined;
  return (
    served !== undefined &&
    served.ttl === change.ttl &&
    served.rdata.length === change.rdata.length &&
    change.rdata.every((r) => served.rdata.some((s) => rdataEquals(s, r)))
  );
}

/** Whether the served zone still holds the RRset content a change expected. */
function showsExpected(zone: ServedZone, change: RecordChange): boolean {
  const view = { rrset: (ownerKey: string, type: number) => zone.node(ownerKey)?.rrsets.get(type) };
  const now = servedContent(view, change.name, change.type);
  return JSON.stringify(now) === JSON.stringify(change.expect);
}

/** The served content of an RRset, as a change's `expect`. */
function servedContent(
  view: Pick<UpdateZoneView, 'rrset'>,
  owner: Name,
  type: string,
): RecordChange['expect'] {
  const served = view.rrset(nameKey(owner), RRType[type as keyof typeof RRType]);
  if (!served) return 'absent';
  return { ttl: served.ttl, records: served.rdata.map((r) => printRdata(r)) };
}

/**
 * The write of one changed RRset: its whole new content, exclusive (RFC 2136 UPDATE never shadows what
 * it does not own), and compared with the content it was evaluated against (`expect`, from `view`).
 */
function toChange(change: RRsetChange, view: Pick<UpdateZoneView, 'rrset'>): RecordChange {
  const expect = servedContent(view, change.owner, change.type);
  if (change.rdata.length === 0)
    return { op: 'delete', name: change.owner, type: change.type, exclusive: true, expect };
  return {
    op: 'upsert',
    name: change.owner,
    type: change.type,
    ttl: change.ttl,
    records: change.rdata.map((r: Rdata) => printRdata(r)),
    exclusive: true,
    expect,
  };
}

/** The served zone as update-eval.ts reads it; names in a child zone served apart are not in it. */
export function zoneView(table: ZoneTable<ServedZone>, zone: ServedZone): UpdateZoneView {
  return {
    origin: zone.origin,
    rrset: (ownerKey, type) => zone.node(ownerKey)?.rrsets.get(type),
    types: (ownerKey) => [...(zone.node(ownerKey)?.rrsets.keys() ?? [])],
    contains: (name) => table.findZone(nameKey(name)) === zone,
  };
}

const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  6: 'YXDOMAIN',
  7: 'YXRRSET',
  8: 'NXRRSET',
  9: 'NOTAUTH',
  10: 'NOTZONE',
};

function rcodeName(rcode: number): string {
  return RCODE_NAMES[rcode] ?? String(rcode);
}

/**
 * The response (RFC 2136 §3.8): the request's header with QR and the RCODE, the zone section as read,
 * no other records; with an OPT when the request had one (RFC 6891 §7; BADVERS's upper bits in it).
 */
export function reply(
  header: Pick<Query, 'id' | 'opcode' | 'rd' | 'cd'> & Partial<Pick<Query, 'qname' | 'qtype' | 'qclass'>>,
  rcode: number,
  edns: QueryEdns | undefined,
): Uint8Array {
  return encodeResponse(new WireWriter(512), header, errorParts(rcode), edns, 512).bytes;
}

/** REFUSED for an UPDATE turned away unread (e.g. too many pending on one connection); null: drop. */
export function refuseUpdate(request: Uint8Array): Uint8Array | null {
  const framed = parseQuery(request, Opcode.UPDATE);
  if (framed.kind === 'drop') return null;
  if (framed.kind === 'error') {
    const { id, opcode, rd } = framed;
    return reply(framed.question ?? { id, opcode, rd, cd: false }, UpdateRcode.REFUSED, framed.edns);
  }
  return reply(framed.query, UpdateRcode.REFUSED, framed.query.edns);
}
