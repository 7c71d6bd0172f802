/**
 * RFC 2136 UPDATE into the built-in server: authenticates the message (TSIG, RFC 8945, with the
 * zone's update keys), applies the zone's update policy, evaluates prerequisites and updates against
 * what is served (update-eval.ts), and hands the changed RRsets to the record writer as one request —
 * the common path of API-written records (ADR 0016): all or none, durable before the answer, and in a
 * cluster forwarded to the operator's leader as RFC 2136 §6 forwards to the primary. Messages are
 * handled one at a time, each answered once what it wrote is served, so the next one's prerequisites
 * see it.
 */
import { decodeMessage, type Message, Opcode, Rcode } from '../../dns/message.ts';
import { type Name, nameKey } from '../../dns/name.ts';
import { printRdata, type Rdata, rdataEquals } from '../../dns/rdata.ts';
import { RRClass, RRType } from '../../dns/rrtype.ts';
import { readTsig, signMessage, tsigErrorResponse, verifyMessage } from '../../dns/tsig.ts';
import { WireWriter } from '../../dns/wire.ts';
import type { Counter, Registry } from '../../metrics/registry.ts';
import type { RecordWriter } from '../../writes/record-writer.ts';
import { updateCredentialName } from '../../writes/update-credentials.ts';
import { type RecordChange, WriteError } from '../../writes/write-request.ts';
import { updateAllowed, updateKeyListed } from '../../zones/update-policy.ts';
import { parseQuery, type Query, type QueryEdns } from '../query.ts';
import { encodeResponse, errorParts } from '../response.ts';
import type { ZoneSnapshot } from '../zone-snapshot.ts';
import type { ZoneTable } from '../zone-table.ts';
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
}

/** How long a signed message's MAC is remembered: twice the TSIG fudge (RFC 8945 §10: 300 s). */
const REPLAY_WINDOW_S = 600;
const MAX_REMEMBERED_MACS = 100_000;

export class UpdateHandler implements UpdateResponder {
  private readonly table: ZoneTable;
  private readonly options: UpdateHandlerOptions;
  private readonly now: () => number;
  private readonly updates?: Counter;
  private queue: Promise<unknown> = Promise.resolve();
  /** MACs of signed UPDATEs seen, with when: a replay inside the TSIG window is refused. */
  private readonly seen = new Map<string, number>();

  constructor(table: ZoneTable, options: UpdateHandlerOptions) {
    this.table = table;
    this.options = options;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.updates = options.registry?.counter(
      'zonekeeper_updates_total',
      'RFC 2136 UPDATE messages, by result (the RCODE name, or replayed, badkey, badsig, badtime, unsigned).',
      ['result'],
    );
  }

  handle(request: Uint8Array, remote: string | undefined): Promise<Uint8Array | null> {
    const run = this.queue.then(() => this.handleNow(request, remote));
    this.queue = run.catch(() => {});
    return run;
  }

  private count(result: string): void {
    this.updates?.labels(result).inc();
  }

  private async handleNow(request: Uint8Array, remote: string | undefined): Promise<Uint8Array | null> {
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
    const verified = verifyMessage(request, policy?.updateKeys ?? (() => undefined), { now });
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
    const mac = Buffer.from(verified.mac).toString('hex');
    this.forgetOld(now);
    if (this.seen.has(mac))
      return answer(UpdateRcode.REFUSED, 'replayed', 'a replay of a message seen before');
    this.seen.set(mac, now);
    const update = policy?.update;
    if (!update || !updateKeyListed(update.rules, key.name))
      return answer(UpdateRcode.REFUSED, 'REFUSED', `the zone's updatePolicy does not name key ${key.name}`);
    const decision = evaluateUpdate(message, zoneView(this.table, zone), (fqdn, type) =>
      updateAllowed(update.rules, zone.origin, key.name, fqdn, type),
    );
    if (!decision.ok) return answer(decision.rcode, rcodeName(decision.rcode), decision.reason);
    if (decision.changes.length === 0) return answer(UpdateRcode.NOERROR, 'NOERROR');
    const writer = this.options.writer();
    if (!writer) return answer(UpdateRcode.SERVFAIL, 'SERVFAIL', 'no record writer is running');
    const credential = updateCredentialName(update.namespace, key.name);
    try {
      const result = await writer.apply(credential, {
        id: `tsig-${mac.slice(0, 120)}`,
        changes: decision.changes.map(toChange),
      });
      // Another replica (or this one before a restart) applied this very message already.
      if (result.replayed)
        return answer(UpdateRcode.REFUSED, 'replayed', 'a replay of a message applied before');
    } catch (e) {
      const code = e instanceof WriteError ? e.code : 'UNAVAILABLE';
      const rcode = code === 'UNAVAILABLE' ? UpdateRcode.SERVFAIL : UpdateRcode.REFUSED;
      return answer(rcode, rcodeName(rcode), `${code}: ${(e as Error).message}`);
    }
    await this.settled(zone.origin, decision.changes);
    return answer(UpdateRcode.NOERROR, 'NOERROR');
  }

  private forgetOld(now: number): void {
    for (const [mac, at] of this.seen) {
      if (now - at <= REPLAY_WINDOW_S && this.seen.size < MAX_REMEMBERED_MACS) break;
      this.seen.delete(mac);
    }
  }

  /** Waits (bounded) until the served zone shows every change: the next UPDATE's prerequisites see it. */
  private async settled(origin: Name, changes: readonly RRsetChange[]): Promise<void> {
    const deadline = Date.now() + (this.options.settleMs ?? 10_000);
    for (;;) {
      const zone = this.table.get(origin);
      if (zone && changes.every((c) => shows(zone, c))) return;
      if (Date.now() >= deadline) {
        this.options.log?.('warn', 'an applied UPDATE is not served yet; answering NOERROR', {
          zone: origin,
        });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

function shows(zone: ZoneSnapshot, change: RRsetChange): boolean {
  const served = zone.nodes
    .get(nameKey(change.owner))
    ?.rrsets.get(RRType[change.type as keyof typeof RRType]);
  if (change.rdata.length === 0) return served === undefined;
  return (
    served !== undefined &&
    served.ttl === change.ttl &&
    served.rdata.length === change.rdata.length &&
    change.rdata.every((r) => served.rdata.some((s) => rdataEquals(s, r)))
  );
}

function toChange(change: RRsetChange): RecordChange {
  if (change.rdata.length === 0)
    return { op: 'delete', name: change.owner, type: change.type, exclusive: true };
  return {
    op: 'upsert',
    name: change.owner,
    type: change.type,
    ttl: change.ttl,
    records: change.rdata.map((r: Rdata) => printRdata(r)),
    exclusive: true,
  };
}

/** The served zone as update-eval.ts reads it; names in a child zone served apart are not in it. */
export function zoneView(table: ZoneTable, zone: ZoneSnapshot): UpdateZoneView {
  return {
    origin: zone.origin,
    rrset: (ownerKey, type) => zone.nodes.get(ownerKey)?.rrsets.get(type),
    types: (ownerKey) => [...(zone.nodes.get(ownerKey)?.rrsets.keys() ?? [])],
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
