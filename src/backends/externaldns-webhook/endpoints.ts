/**
 * Zonekeeper's RRsets as ExternalDNS endpoints, and ExternalDNS's conventions around them: the
 * endpoint shape of its `endpoint` package (`dnsName` without the trailing dot, `targets`,
 * `recordType`, `recordTTL`, `setIdentifier`, `labels`, `providerSpecific`), the domain filter a
 * provider answers at negotiation, and the TXT registry (names and label values of the ownership
 * records ExternalDNS keeps beside each record it owns). Pure: no I/O.
 *
 * Targets, one per record: A/AAAA the address, CNAME/NS/PTR the host name without the trailing dot,
 * MX `preference host`, SRV `priority weight port host` (ExternalDNS's own forms), TXT the record in
 * presentation form (each character-string quoted, RFC 1035 §5.1) — the form ExternalDNS's TXT
 * registry itself writes — and NAPTR and TLSA in presentation form.
 */
import { type Name, nameKey } from '../../dns/name.ts';
import type { Rdata } from '../../dns/rdata/types.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { RRsetData } from '../../zones/rrset.ts';

/** The media type of the webhook protocol, version 1 (request Accept, answer Content-Type). */
export const WEBHOOK_MEDIA_TYPE = 'application/external.dns.webhook+json;version=1';

/** An endpoint as ExternalDNS's webhook protocol carries it (JSON of endpoint.Endpoint). */
export interface Endpoint {
  dnsName: string;
  targets?: string[];
  recordType: string;
  setIdentifier?: string;
  recordTTL?: number;
  labels?: Record<string, string>;
  providerSpecific?: { name: string; value: string }[];
}

/** The body of `POST /records` (plan.Changes). */
export interface Changes {
  create: Endpoint[];
  updateOld: Endpoint[];
  updateNew: Endpoint[];
  delete: Endpoint[];
}

/**
 * The record types an endpoint can carry that Zonekeeper also has: ExternalDNS's known types
 * (endpoint.KnownRecordTypes: A, AAAA, CNAME, TXT, SRV, NS, PTR, MX, NAPTR, DNAME, TLSA) without
 * DNAME, which Zonekeeper has no record sets of.
 */
export const ENDPOINT_RECORD_TYPES: readonly RecordTypeName[] = [
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'SRV',
  'NS',
  'PTR',
  'MX',
  'NAPTR',
  'TLSA',
];

/** Types whose data is addresses, numbers and names only. */
const CASELESS: ReadonlySet<string> = new Set(['A', 'AAAA', 'CNAME', 'NS', 'PTR', 'MX', 'SRV']);

/** A name as an endpoint's dnsName: lower-case, without the trailing dot. */
export function dnsName(name: Name): string {
  return nameKey(name).replace(/\.$/, '');
}

function bare(name: Name): string {
  return name.endsWith('.') && name !== '.' ? name.slice(0, -1) : name;
}

function target(rdata: Rdata): string {
  switch (rdata.type) {
    case 'A':
    case 'AAAA':
      return rdata.address;
    case 'CNAME':
      return bare(nameKey(rdata.target));
    case 'NS':
      return bare(nameKey(rdata.host));
    case 'PTR':
      return bare(nameKey(rdata.target));
    case 'MX':
      return `${rdata.preference} ${bare(nameKey(rdata.exchange))}`;
    case 'SRV':
      return `${rdata.priority} ${rdata.weight} ${rdata.port} ${bare(nameKey(rdata.target))}`;
    default:
      return printRdata(rdata);
  }
}

/** The key of an endpoint at a provider: name, type and set identifier (endpoint.Key()). */
export function endpointKey(e: Pick<Endpoint, 'dnsName' | 'recordType' | 'setIdentifier'>): string {
  return `${e.dnsName.toLowerCase().replace(/\.$/, '')} ${e.recordType} ${e.setIdentifier ?? ''}`;
}

/** The endpoint for an RRset, or why there cannot be one. */
export function toEndpoint(rrset: RRsetData): Endpoint | { refused: string } {
  if (!ENDPOINT_RECORD_TYPES.includes(rrset.type))
    return {
      refused: `ExternalDNS endpoints carry no ${rrset.type} records (only ${ENDPOINT_RECORD_TYPES.join(', ')})`,
    };
  if (rrset.owner.includes('\\'))
    return { refused: 'names with escaped characters cannot be carried as an endpoint dnsName' };
  const targets = rrset.rdata.map(target).sort();
  return {
    dnsName: dnsName(rrset.owner),
    targets,
    recordType: rrset.type,
    ...(rrset.ttl > 0 ? { recordTTL: rrset.ttl } : {}),
  };
}

/**
 * An endpoint's targets as records in Zonekeeper's presentation form, sorted (for comparison and
 * for people); a target that does not parse is kept as written, so it never compares equal.
 */
export function endpointRecords(e: Endpoint): string[] {
  const type = e.recordType as RecordTypeName;
  return (e.targets ?? [])
    .map((t) => {
      if (!ENDPOINT_RECORD_TYPES.includes(type)) return t;
      try {
        // Names in targets are absolute without the trailing dot: parsed against the root. Names
        // compare without case (RFC 4343); TXT, NAPTR and TLSA data as written.
        const printed = printRdata(parseRdata(type, t, '.'));
        return CASELESS.has(type) ? printed.toLowerCase() : printed;
      } catch {
        return `${t} (unparsable)`;
      }
    })
    .sort();
}

/**
 * Whether the provider holds `want`: the same records (as a set, in canonical form) and, where the
 * provider reports a TTL, the same TTL.
 */
export function sameEndpoint(want: Endpoint, have: Endpoint): boolean {
  if (have.recordTTL !== undefined && have.recordTTL > 0 && have.recordTTL !== (want.recordTTL ?? 0))
    return false;
  const a = [...new Set(endpointRecords(want))];
  const b = [...new Set(endpointRecords(have))];
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

// --- domain filter ------------------------------------------------------------------------------

/** A provider's domain filter as answered at negotiation (endpoint.DomainFilter's JSON). */
export interface DomainFilterJson {
  include?: string[];
  exclude?: string[];
  regexInclude?: string;
  regexExclude?: string;
}

export interface DomainFilter {
  match(name: string): boolean;
  /** For people: `include a.example, b.example; exclude c.a.example`. */
  readonly text: string;
}

function normalise(domain: string): string {
  return domain.trim().toLowerCase().replace(/\.$/, '');
}

function matchList(filters: readonly string[], domain: string, empty: boolean): boolean {
  if (filters.length === 0) return empty;
  for (const f of filters) {
    if (f === '') continue;
    if (f.startsWith('.') && domain.endsWith(f)) return true;
    if (domain === f) return true;
    if (domain.endsWith(`.${f}`)) return true;
  }
  return false;
}

/**
 * The filter ExternalDNS's DomainFilter.Match applies: a regex pair when either is set, otherwise
 * `include` (a name equal to or below an entry; an entry starting with `.` matches below only; none
 * matches everything) minus `exclude`. Names are compared in ASCII (A-labels): a filter written in
 * Unicode matches nothing Zonekeeper writes, so Zonekeeper refuses it rather than guess.
 */
export function domainFilter(json: DomainFilterJson): DomainFilter {
  if (json.regexInclude || json.regexExclude) {
    let include: RegExp | undefined;
    let exclude: RegExp | undefined;
    try {
      include = json.regexInclude ? new RegExp(json.regexInclude) : undefined;
      exclude = json.regexExclude ? new RegExp(json.regexExclude) : undefined;
    } catch (e) {
      throw new Error(
        `the provider's domain filter has a regular expression Zonekeeper cannot read: ${(e as Error).message}`,
      );
    }
    return {
      match: (name) => {
        const d = normalise(name);
        if (exclude?.test(d)) return false;
        return include === undefined || include.test(d);
      },
      text: [
        json.regexInclude ? `regexInclude ${json.regexInclude}` : '',
        json.regexExclude ? `regexExclude ${json.regexExclude}` : '',
      ]
        .filter(Boolean)
        .join('; '),
    };
  }
  const include = (json.include ?? []).map(normalise).filter((d) => d !== '');
  const exclude = (json.exclude ?? []).map(normalise).filter((d) => d !== '');
  for (const d of [...include, ...exclude])
    if (/[^\x20-\x7e]/.test(d))
      throw new Error(
        `the provider's domain filter names ${JSON.stringify(d)} in Unicode; Zonekeeper compares A-labels (xn--)`,
      );
  return {
    match: (name) => {
      const d = normalise(name);
      return matchList(include, d, true) && !matchList(exclude, d, false);
    },
    text:
      include.length === 0 && exclude.length === 0
        ? 'every name'
        : [
            include.length > 0 ? `include ${include.join(', ')}` : '',
            exclude.length > 0 ? `exclude ${exclude.join(', ')}` : '',
          ]
            .filter(Boolean)
            .join('; '),
  };
}

/** Reads a negotiation answer's body as a domain filter, or says what is wrong with it. */
export function parseDomainFilter(body: unknown): DomainFilterJson {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new Error('the negotiation answer is not a JSON object (a domain filter)');
  const o = body as Record<string, unknown>;
  const list = (k: string): string[] | undefined => {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
      throw new Error(`the domain filter's ${k} is not a list of strings`);
    return v as string[];
  };
  const text = (k: string): string | undefined => {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw new Error(`the domain filter's ${k} is not a string`);
    return v;
  };
  const include = list('include');
  const exclude = list('exclude');
  const regexInclude = text('regexInclude');
  const regexExclude = text('regexExclude');
  return {
    ...(include ? { include } : {}),
    ...(exclude ? { exclude } : {}),
    ...(regexInclude ? { regexInclude } : {}),
    ...(regexExclude ? { regexExclude } : {}),
  };
}

/** Reads `GET /records`'s body as endpoints, or says what is wrong with it. */
export function parseEndpoints(body: unknown): Endpoint[] {
  if (!Array.isArray(body)) throw new Error('the record list is not a JSON array of endpoints');
  return body.map((e, i) => {
    if (e === null || typeof e !== 'object') throw new Error(`endpoint ${i} is not an object`);
    const o = e as Record<string, unknown>;
    if (typeof o.dnsName !== 'string' || o.dnsName === '') throw new Error(`endpoint ${i} has no dnsName`);
    if (typeof o.recordType !== 'string' || o.recordType === '')
      throw new Error(`endpoint ${i} (${o.dnsName}) has no recordType`);
    if (o.targets !== undefined && o.targets !== null) {
      if (!Array.isArray(o.targets) || o.targets.some((t) => typeof t !== 'string'))
        throw new Error(`endpoint ${i} (${o.dnsName}) has targets that are not strings`);
    }
    if (o.recordTTL !== undefined && o.recordTTL !== null && typeof o.recordTTL !== 'number')
      throw new Error(`endpoint ${i} (${o.dnsName}) has a recordTTL that is not a number`);
    if (o.setIdentifier !== undefined && o.setIdentifier !== null && typeof o.setIdentifier !== 'string')
      throw new Error(`endpoint ${i} (${o.dnsName}) has a setIdentifier that is not a string`);
    let labels: Record<string, string> | undefined;
    if (o.labels !== undefined && o.labels !== null) {
      if (typeof o.labels !== 'object' || Array.isArray(o.labels))
        throw new Error(`endpoint ${i} (${o.dnsName}) has labels that are not an object`);
      labels = {};
      for (const [k, v] of Object.entries(o.labels as Record<string, unknown>))
        if (typeof v === 'string') labels[k] = v;
    }
    const out: Endpoint = { dnsName: o.dnsName, recordType: o.recordType };
    if (Array.isArray(o.targets)) out.targets = o.targets as string[];
    if (typeof o.recordTTL === 'number') out.recordTTL = o.recordTTL;
    if (typeof o.setIdentifier === 'string' && o.setIdentifier !== '') out.setIdentifier = o.setIdentifier;
    if (labels) out.labels = labels;
    if (Array.isArray(o.providerSpecific))
      out.providerSpecific = (o.providerSpecific as unknown[]).filter(
        (p): p is { name: string; value: string } =>
          p !== null &&
          typeof p === 'object' &&
          typeof (p as { name?: unknown }).name === 'string' &&
          typeof (p as { value?: unknown }).value === 'string',
      );
    return out;
  });
}

// --- TXT registry -------------------------------------------------------------------------------

/** How ownership records are named (ExternalDNS's --txt-prefix, --txt-suffix, --txt-wildcard-replacement). */
export interface RegistryNaming {
  prefix: string;
  suffix: string;
  wildcardReplacement: string;
}

const RECORD_TYPE_TEMPLATE = '%{record_type}';

/**
 * The name of the ownership TXT record of the endpoint `name` of `recordType`, as ExternalDNS's
 * registry/mapper AffixNameMapper.ToTXTName makes it: the first label gets `<type>-` (unless the
 * prefix or suffix holds `%{record_type}`), the prefix and suffix wrap the first label. The apex of
 * a zone gets a name one level up (`a-example.com` for `example.com`), exactly as ExternalDNS does.
 */
export function registryName(name: string, recordType: string, naming: RegistryNaming): string {
  const type = recordType.toLowerCase();
  const prefix = naming.prefix.toLowerCase().replaceAll(RECORD_TYPE_TEMPLATE, type);
  const suffix = naming.suffix.toLowerCase().replaceAll(RECORD_TYPE_TEMPLATE, type);
  const cut = name.indexOf('.');
  let first = cut === -1 ? name : name.slice(0, cut);
  const rest = cut === -1 ? undefined : name.slice(cut + 1);
  if (naming.wildcardReplacement !== '' && first === '*') first = naming.wildcardReplacement.toLowerCase();
  const templated =
    naming.prefix.includes(RECORD_TYPE_TEMPLATE) || naming.suffix.includes(RECORD_TYPE_TEMPLATE);
  if (!templated) first = `${type}-${first}`;
  return rest === undefined ? `${prefix}${first}${suffix}` : `${prefix}${first}${suffix}.${rest}`;
}

const HERITAGE = 'external-dns';

/**
 * The labels an ownership record's value holds (endpoint.NewLabelsFromStringPlain): undefined when
 * the value is not one (no `heritage=external-dns`), so the TXT record is an ordinary record.
 * Encrypted registry values (--txt-encrypt-enabled) are not read: they count as ordinary records.
 */
export function registryLabels(value: string): Record<string, string> | undefined {
  // As ExternalDNS: surrounding quotes dropped; a presentation-form value is one quoted string.
  let text = value;
  if (/^"(?:[^"\\]|\\.)*"$/.test(value)) {
    try {
      const parsed = parseRdata('TXT', value, '.');
      if (parsed.type === 'TXT') text = parsed.strings.join('');
    } catch {
      text = value.replace(/^"+|"+$/g, '');
    }
  } else text = value.replace(/^"+|"+$/g, '');
  const labels: Record<string, string> = {};
  let heritage = false;
  for (const token of text.split(',')) {
    const eq = token.indexOf('=');
    if (eq === -1) continue;
    const key = token.slice(0, eq);
    const val = token.slice(eq + 1);
    if (key === 'heritage') {
      if (val !== HERITAGE) return undefined;
      heritage = true;
      continue;
    }
    if (key.startsWith(`${HERITAGE}/`)) labels[key.slice(HERITAGE.length + 1)] = val;
  }
  return heritage ? labels : undefined;
}

/** Whether a TXT string looks like an ownership record's value (a record set must not forge one). */
export function looksLikeRegistryValue(text: string): boolean {
  return /(^|[",\s])heritage=/.test(text);
}

/** An ownership record's value (endpoint.Labels.SerializePlain(true)): quoted, keys sorted. */
export function registryValue(labels: Record<string, string>): string {
  const tokens = [`heritage=${HERITAGE}`];
  for (const key of Object.keys(labels).sort()) tokens.push(`${HERITAGE}/${key}=${labels[key]}`);
  return `"${tokens.join(',')}"`;
}
