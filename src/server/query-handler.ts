import { Rcode } from '../dns/message.ts';
import { type Name, nameKey, stripFirstLabel } from '../dns/name.ts';
import { RRClass, RRType } from '../dns/rrtype.ts';
import { WireWriter } from '../dns/wire.ts';
import type { AliasResolver } from './alias-resolver.ts';
import { type Answer, answerQuery, Outcome } from './answer.ts';
import { ChildTemplates, DEFAULT_CHILD_TEMPLATE_BYTES, DEFAULT_CHILD_TEMPLATES } from './child-templates.ts';
import { parseQuery, type Query } from './query.ts';
import { encodeResponse, errorParts, type ResponseParts, responseLimit } from './response.ts';
import { DEFAULT_RESPONSE_CACHE_ENTRIES, ResponseCache } from './response-cache.ts';
import { ResponseRateLimiter, type RrlSettings } from './rrl.ts';
import { selectParts } from './selection/answer-stage.ts';
import type { ServerMetrics, Transport } from './server-metrics.ts';
import type { ZoneDnssecView } from './zone-dnssec.ts';
import type { ServedRRset } from './zone-snapshot.ts';
import type { ServedZone, ZoneTable } from './zone-table.ts';

export interface ChaosIdentity {
  /** Answer for id.server. and hostname.bind.; undefined refuses them. */
  identity?: string;
  /** Answer for version.server. and version.bind.; off unless configured. */
  version?: string;
}

export interface QueryHandlerOptions {
  table: ZoneTable<ServedZone>;
  chaos?: ChaosIdentity;
  aliasResolver?: AliasResolver;
  metrics?: ServerMetrics;
  /** Responses kept for reuse (default DEFAULT_RESPONSE_CACHE_ENTRIES, 100,000; 0 turns the cache off). */
  responseCache?: number;
  /**
   * Templates for the answers to names that do not exist below a name that does (default
   * DEFAULT_CHILD_TEMPLATES, 10,000; 0 turns them off; off with the response cache, whose key they use).
   */
  childTemplates?: number;
  /** Bytes all templates may hold together (default DEFAULT_CHILD_TEMPLATE_BYTES, 4 MiB; 0 turns them off). */
  childTemplateBytes?: number;
  /** Response rate limiting for UDP (see rrl.ts); off unless given (`createQueryHandler` turns it on). */
  rrl?: RrlSettings;
}

/**
 * Turns one request into one response (or none). Synchronous for everything answered from memory;
 * a Promise only when an ALIAS target has to be resolved.
 */
export class QueryHandler {
  private readonly table: ZoneTable<ServedZone>;
  private readonly chaos: ChaosIdentity;
  private readonly aliasResolver: AliasResolver | undefined;
  private readonly metrics: ServerMetrics | undefined;
  private readonly writer = new WireWriter(4096);
  /** Whole responses for repeated plain questions; off when `responseCache` is 0. */
  private readonly cache: ResponseCache | undefined;
  /** NXDOMAIN, wildcard and wildcard-NODATA responses reused across the names they apply to. */
  private readonly templates: ChildTemplates | undefined;
  /** The answer `respond` computed last (read right after it, to decide whether it can be a template). */
  private lastAnswer: Answer | undefined;
  /** Whether the response `finish` encoded last holds every record of its answer. */
  private lastWhole = false;
  /** Applied by the server to every UDP response (`DnsServer`); undefined when off. */
  readonly rateLimiter: ResponseRateLimiter | undefined;
  /**
   * For the response the last `handle` returned synchronously: the rate limiter's tag for the wildcard
   * it was synthesised from, else 0 — what the server passes to `rateLimiter.filter`, since the bytes
   * of an unsigned answer do not tell a wildcard's names from names of their own.
   */
  lastWildcard = 0;

  constructor(options: QueryHandlerOptions) {
    this.table = options.table;
    this.chaos = options.chaos ?? {};
    this.aliasResolver = options.aliasResolver;
    this.metrics = options.metrics;
    const size = options.responseCache ?? DEFAULT_RESPONSE_CACHE_ENTRIES;
    this.cache = size > 0 ? new ResponseCache(size) : undefined;
    const templates = options.childTemplates ?? DEFAULT_CHILD_TEMPLATES;
    const templateBytes = options.childTemplateBytes ?? DEFAULT_CHILD_TEMPLATE_BYTES;
    this.templates =
      this.cache !== undefined && templates > 0 && templateBytes > 0
        ? new ChildTemplates(templates, templateBytes)
        : undefined;
    const rrl = options.rrl;
    this.rateLimiter =
      rrl !== undefined && rrl.enabled !== false ? new ResponseRateLimiter(rrl, this.metrics) : undefined;
  }

  /**
   * `received`: when the request arrived (`performance.now()`), if the caller took the time already
   * (the UDP path does, for response rate limiting too). `client`: the source address, for RRsets
   * answered through a selection policy.
   */
  handle(
    buf: Uint8Array,
    transport: Transport,
    received = performance.now(),
    client?: string,
  ): Uint8Array | null | Promise<Uint8Array | null> {
    const started = received;
    const tcp = transport === 'tcp';
    const cache = this.cache;
    const questionEnd = cache === undefined ? 0 : cache.read(buf, tcp);
    const version = this.table.version;
    this.lastWildcard = 0;
    if (questionEnd !== 0) {
      const hit = cache!.get(version);
      if (hit >= 0) {
        this.metrics?.cacheLookup(true);
        const c = cache!;
        this.lastWildcard = c.wildcardAt(hit);
        this.metrics?.query(c.qtypeAt(hit), c.rcodeAt(hit), transport, (performance.now() - started) / 1000);
        return c.answer(hit, buf, questionEnd);
      }
      // A name with no data below one that has (random subdomains, wildcard names): from its template.
      const templates = this.templates;
      // No key strings are built while there is no template to find (most misses, most of the time).
      if (templates !== undefined && templates.size > 0 && this.table.selections.size === 0) {
        const label = cache!.firstLabel();
        if (label !== undefined) {
          const out = templates.answer(buf, questionEnd, cache!.parentKey()!, label, version, this.isApex);
          if (out !== null) {
            this.metrics?.cacheTemplate();
            const qtype = (buf[questionEnd - 4]! << 8) | buf[questionEnd - 3]!;
            this.metrics?.query(qtype, templates.rcode, transport, (performance.now() - started) / 1000);
            const wildcard = templates.wildcard;
            this.lastWildcard = wildcard;
            // Kept like any answer: names synthesised from a wildcard are often asked again.
            if (cache!.set(out, version, qtype, wildcard) === 'chain-full')
              this.metrics?.cacheChainFull.inc();
            return out;
          }
        }
      }
      this.metrics?.cacheLookup(false);
    }
    const parsed = parseQuery(buf);
    if (parsed.kind === 'drop') {
      this.metrics?.drop(parsed.why);
      return null;
    }
    if (parsed.kind === 'error') {
      const q = parsed.question;
      const header = { id: parsed.id, opcode: parsed.opcode, rd: parsed.rd, cd: false };
      const limit = responseLimit(parsed.edns, tcp);
      const out = encodeResponse(
        this.writer,
        q ? { ...q, ...header } : header,
        errorParts(parsed.rcode),
        parsed.edns,
        limit,
      );
      this.metrics?.query(q?.qtype ?? 0, parsed.rcode, transport, (performance.now() - started) / 1000);
      return out.bytes;
    }
    const query = parsed.query;
    const parts = this.respond(query, client);
    if (parts instanceof Promise) {
      // Known now, before the lookup upstream: the server reads it when this returns (rate limiting).
      this.lastWildcard = this.wildcardOf(this.lastAnswer);
      return parts.then((p) => this.finish(new WireWriter(1024), query, p, transport, started));
    }
    const bytes = this.finish(this.writer, query, parts, transport, started);
    const wildcard = this.wildcardOf(this.lastAnswer);
    this.lastWildcard = wildcard;
    // Nothing ran between read() and here (the ALIAS path above is the only await), so the key stands.
    // An answer selected for this client is not reused for others (ADR 0017).
    if (
      questionEnd !== 0 &&
      parts.selected !== true &&
      cache!.set(bytes, version, query.qtype, wildcard) === 'chain-full'
    ) {
      this.metrics?.cacheChainFull.inc();
    }
    if (questionEnd !== 0 && this.templates !== undefined && parts.selected !== true && this.lastWhole)
      this.learnTemplate(query, bytes, questionEnd, version, tcp, wildcard);
    return bytes;
  }

  /** Keeps a response as the template for its name's siblings that have no data (see ChildTemplates). */
  private learnTemplate(
    query: Query,
    bytes: Uint8Array,
    questionEnd: number,
    version: number,
    tcp: boolean,
    wildcard: number,
  ): void {
    const answer = this.lastAnswer;
    if (answer === undefined || !templatable(answer)) return;
    if (query.qclass !== RRClass.IN || query.edns?.dnssecOk === true || this.table.selections.size > 0)
      return;
    const label = this.cache!.firstLabel();
    if (label === undefined) return;
    const childKey = nameKey(query.qname);
    const parentKey = stripFirstLabel(childKey);
    // The key `answer` rebuilds from the label and the parent must be this one.
    if (childKey !== (parentKey === '.' ? `${label}.` : `${label}.${parentKey}`)) return;
    const zone = this.table.findZone(childKey);
    if (zone === undefined) return;
    this.templates!.learn(this.cache!.parentKey()!, {
      bytes,
      questionEnd,
      limit: responseLimit(query.edns, tcp),
      version,
      zone,
      childKey,
      parentKey,
      qtype: query.qtype,
      wildcard,
    });
  }

  /**
   * The rate limiter's tag for the wildcard an answer was synthesised from (its first RRset that was,
   * RFC 4592 §3.3.1: a CNAME from a wildcard too; or the ALIAS it completes), 0 when none or when
   * there is no limiter.
   */
  private wildcardOf(answer: Answer | undefined): number {
    const limiter = this.rateLimiter;
    if (limiter === undefined || answer === undefined) return 0;
    for (const rrset of answer.answer)
      if (rrset.source !== undefined) return limiter.wildcardTag(nameKey(rrset.source.owner));
    const alias = answer.alias?.source;
    return alias === undefined ? 0 : limiter.wildcardTag(nameKey(alias));
  }

  /** Whether a zone's apex has this key (a zone of its own: not a child without data). */
  private readonly isApex = (key: string): boolean => this.table.get(key) !== undefined;

  private finish(
    w: WireWriter,
    query: Query,
    parts: ResponseParts,
    transport: Transport,
    started: number,
  ): Uint8Array {
    const out = encodeResponse(w, query, parts, query.edns, responseLimit(query.edns, transport === 'tcp'));
    this.lastWhole = !out.truncated && !out.dropped;
    if (out.truncated) this.metrics?.truncated.inc();
    this.metrics?.query(query.qtype, parts.rcode, transport, (performance.now() - started) / 1000);
    return out.bytes;
  }

  private respond(query: Query, client: string | undefined): ResponseParts | Promise<ResponseParts> {
    this.lastAnswer = undefined;
    // RFC 6891 §6.1.3: we implement EDNS version 0 only.
    if (query.edns && query.edns.version !== 0) return errorParts(Rcode.BADVERS);
    if (query.qclass === RRClass.CH) return this.chaosAnswer(query);
    // RFC 1035 §3.2.5: QCLASS ANY matches IN, the only class we hold data for.
    if (query.qclass !== RRClass.IN && query.qclass !== RRClass.ANY) return errorParts(Rcode.REFUSED);
    // Zone transfers and meta-queries are not served over this path (RFC 5936 needs TCP and an ACL).
    if (query.qtype === RRType.AXFR || query.qtype === RRType.IXFR || query.qtype === RRType.OPT) {
      return errorParts(query.qtype === RRType.OPT ? Rcode.FORMERR : Rcode.REFUSED);
    }
    const answer = answerQuery(this.table, query.qname, query.qtype, query.edns?.dnssecOk === true);
    this.lastAnswer = answer;
    // The answer stage of RRset selection (selection/answer-stage.ts): nothing runs while no RRset is
    // bound to a policy. In a signed answer (DO set, signed zone) a chosen subset is signed where it is
    // chosen (ADR 0021, docs/dnssec.md).
    const selections = this.table.selections;
    const select = selections.size > 0;
    const signed = answer.signed === true ? this.zoneDnssec : undefined;
    if (answer.outcome === Outcome.Alias) {
      const completed = this.completeAlias(query, answer);
      return !select
        ? completed
        : completed.then((p) => selectParts(selections, p, query, client, this.negativeSoa, signed));
    }
    const parts = partsFrom(answer);
    return !select ? parts : selectParts(selections, parts, query, client, this.negativeSoa, signed);
  }

  /** The negative SOA of a zone, for a NODATA a selection makes (RFC 2308 §2.2). */
  private readonly negativeSoa = (zone: Name): ServedRRset | undefined => this.table.get(zone)?.negativeSoa;

  /** A zone's DNSSEC view, to sign the subset a selection chose in a signed answer. */
  private readonly zoneDnssec = (zone: Name): ZoneDnssecView | undefined => this.table.get(zone)?.dnssec;

  private async completeAlias(query: Query, answer: Answer): Promise<ResponseParts> {
    const alias = answer.alias!;
    if (!this.aliasResolver) return { ...errorParts(Rcode.SERVFAIL), answer: answer.answer };
    const resolved = await this.aliasResolver.resolve(alias.target, query.qtype);
    if (resolved.kind === 'fail') return { ...errorParts(Rcode.SERVFAIL), answer: answer.answer };
    const zone = this.table.findZone(nameKey(alias.owner));
    // DO set and the zone signed: the synthesized RRset is signed here (ADR 0021). A NODATA (the target
    // has none of the type) is proven by the owner's denial record without the type, signed here too
    // (ADR 0028): the chain's own record lists A and AAAA as what may be synthesized there.
    const signing = answer.aliasZone?.dnssec;
    if (resolved.kind === 'nodata' || resolved.rdata.length === 0) {
      const soaSig = signing?.rrsig(answer.aliasZone!.originKey, RRType.SOA);
      const proof = signing?.proveSynthesizedNodata?.(nameKey(alias.owner), query.qtype) ?? [];
      return {
        rcode: Rcode.NOERROR,
        aa: true,
        answer: answer.answer,
        authority: zone
          ? [zone.negativeSoa, ...(soaSig ? [{ ...soaSig, ttl: zone.negativeSoa.ttl }] : []), ...proof]
          : [],
        additional: [],
      };
    }
    // The synthesized RRset lives no longer than the ALIAS record or the target's records.
    const rrset: ServedRRset = {
      owner: alias.owner,
      type: query.qtype,
      ttl: Math.min(alias.ttl, resolved.ttl),
      rdata: resolved.rdata,
    };
    const sig = signing?.signSynthesized?.(rrset);
    return {
      rcode: Rcode.NOERROR,
      aa: true,
      answer: [...answer.answer, rrset, ...(sig ? [sig] : [])],
      authority: [],
      additional: [],
    };
  }

  /** CHAOS-class identity queries (RFC 4892 §2 for id.server; hostname.bind and version.bind by convention). */
  private chaosAnswer(query: Query): ResponseParts {
    const key = nameKey(query.qname);
    let text: string | undefined;
    if (key === 'id.server.' || key === 'hostname.bind.') text = this.chaos.identity;
    else if (key === 'version.server.' || key === 'version.bind.') text = this.chaos.version;
    else return errorParts(Rcode.REFUSED);
    if (text === undefined) return errorParts(Rcode.REFUSED);
    if (query.qtype !== RRType.TXT && query.qtype !== RRType.ANY) {
      return {
        rcode: Rcode.NOERROR,
        aa: true,
        answer: [],
        authority: [],
        additional: [],
        rrclass: RRClass.CH,
      };
    }
    const rrset: ServedRRset = {
      owner: query.qname as Name,
      type: RRType.TXT,
      ttl: 0,
      rdata: [{ type: 'TXT', strings: [text] }],
    };
    return {
      rcode: Rcode.NOERROR,
      aa: true,
      answer: [rrset],
      authority: [],
      additional: [],
      rrclass: RRClass.CH,
    };
  }
}

/**
 * Whether nothing in an answer depends on the question's name except where a template puts it back:
 * NXDOMAIN or NODATA with an empty answer section, or RRsets synthesised from a wildcard (not a CNAME,
 * whose chain could lead back to the name), unsigned.
 */
function templatable(answer: Answer): boolean {
  if (answer.signed === true) return false;
  if (answer.outcome === Outcome.NxDomain || answer.outcome === Outcome.NoData)
    return answer.answer.length === 0;
  if (answer.outcome !== Outcome.Answer || answer.answer.length === 0) return false;
  for (const rrset of answer.answer)
    if (rrset.source === undefined || rrset.type === RRType.CNAME) return false;
  return true;
}

function partsFrom(answer: Answer): ResponseParts {
  switch (answer.outcome) {
    case Outcome.Refused:
      // RFC 1035 §4.1.1: REFUSED for names outside every zone we are authoritative for.
      return errorParts(Rcode.REFUSED);
    case Outcome.NxDomain:
      return {
        rcode: Rcode.NXDOMAIN,
        aa: true,
        answer: answer.answer,
        authority: answer.authority,
        additional: [],
      };
    case Outcome.Referral:
      return {
        rcode: Rcode.NOERROR,
        aa: false,
        answer: [],
        authority: answer.authority,
        additional: answer.additional,
        glueRequired: true,
      };
    default:
      return {
        rcode: Rcode.NOERROR,
        aa: true,
        answer: answer.answer,
        authority: answer.authority,
        additional: answer.additional,
      };
  }
}
