/**
 * Registration data of a domain, the parsing without the I/O: the IANA RDAP bootstrap registry
 * (RFC 9224), an RDAP domain answer (RFC 9083), a WHOIS referral from IANA and a registry's WHOIS
 * answer (RFC 3912 text; the keys ICANN's registry agreements prescribe), and whether a registration
 * is about to expire. The clients are src/domains/registration-client.ts.
 */
import { domainText } from './zone-name-servers.ts';

export interface Registration {
  source: 'RDAP' | 'WHOIS';
  /** The server that answered (an RDAP base URL or a WHOIS host). */
  server: string;
  registrar?: string;
  registry?: string;
  created?: string;
  updated?: string;
  expires?: string;
  statuses?: string[];
  /** Whether the parent publishes DS records for the domain (RFC 9083 §5.3 secureDNS.delegationSigned). */
  dnssecSigned?: boolean;
  nameservers?: string[];
  abuseEmail?: string;
  abusePhone?: string;
}

/** RFC 9224 §4: the base URLs of the longest TLD entry that matches the domain's labels. */
export function rdapBaseUrls(bootstrap: unknown, domain: string): string[] {
  const services = (bootstrap as { services?: unknown })?.services;
  if (!Array.isArray(services)) return [];
  const labels = domainText(domain).split('.');
  let best: { length: number; urls: string[] } | undefined;
  for (const service of services) {
    if (!Array.isArray(service) || !Array.isArray(service[0]) || !Array.isArray(service[1])) continue;
    for (const entry of service[0] as unknown[]) {
      if (typeof entry !== 'string') continue;
      const suffix = domainText(entry);
      const n = suffix.split('.').length;
      if (labels.slice(-n).join('.') !== suffix) continue;
      if (!best || n > best.length)
        best = {
          length: n,
          urls: (service[1] as unknown[]).filter((u): u is string => typeof u === 'string'),
        };
    }
  }
  if (!best) return [];
  // §3: prefer HTTPS, keep the order otherwise.
  return [...best.urls].sort((a, b) => Number(b.startsWith('https:')) - Number(a.startsWith('https:')));
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A vCard property (jCard, RFC 7095) of an entity: the first value of `name`. */
function vcard(entity: Json, name: string): string | undefined {
  const card = entity.vcardArray;
  if (!Array.isArray(card) || !Array.isArray(card[1])) return undefined;
  for (const prop of card[1] as unknown[])
    if (Array.isArray(prop) && prop[0] === name && typeof prop[3] === 'string') return prop[3];
  return undefined;
}

function entitiesWithRole(entities: unknown, role: string): Json[] {
  if (!Array.isArray(entities)) return [];
  return entities.filter(
    (e): e is Json => isObject(e) && Array.isArray(e.roles) && (e.roles as unknown[]).includes(role),
  );
}

/** RFC 9083 §5.3: a domain object's registration data. */
export function parseRdapDomain(answer: unknown, server: string): Registration {
  if (!isObject(answer) || answer.objectClassName !== 'domain')
    throw new Error('the RDAP answer is not a domain object (RFC 9083 §5.3)');
  const out: Registration = { source: 'RDAP', server, registry: hostOf(server) };
  const registrar = entitiesWithRole(answer.entities, 'registrar')[0];
  if (registrar) {
    const name = vcard(registrar, 'fn');
    if (name) out.registrar = name;
    const abuse = entitiesWithRole(registrar.entities, 'abuse')[0];
    if (abuse) {
      const email = vcard(abuse, 'email');
      const tel = vcard(abuse, 'tel');
      if (email) out.abuseEmail = email;
      if (tel) out.abusePhone = tel.replace(/^tel:/, '');
    }
  }
  // RFC 9083 §4.5: events by action.
  for (const e of Array.isArray(answer.events) ? answer.events : []) {
    if (!isObject(e) || typeof e.eventDate !== 'string') continue;
    if (e.eventAction === 'registration') out.created = e.eventDate;
    else if (e.eventAction === 'last changed') out.updated = e.eventDate;
    else if (e.eventAction === 'expiration') out.expires = e.eventDate;
  }
  if (Array.isArray(answer.status))
    out.statuses = answer.status.filter((s): s is string => typeof s === 'string');
  if (isObject(answer.secureDNS) && typeof answer.secureDNS.delegationSigned === 'boolean')
    out.dnssecSigned = answer.secureDNS.delegationSigned;
  if (Array.isArray(answer.nameservers))
    out.nameservers = answer.nameservers
      .filter(isObject)
      .map((n) => (typeof n.ldhName === 'string' ? domainText(n.ldhName) : ''))
      .filter(Boolean);
  return out;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

/** The WHOIS server IANA refers to for a TLD (`refer:` or `whois:` line), if any. */
export function whoisReferral(text: string): string | undefined {
  const m = /^(?:refer|whois):\s*(\S+)\s*$/im.exec(text);
  return m?.[1]?.toLowerCase();
}

/** A registry's WHOIS answer in the usual `Key: value` form. */
export function parseWhois(text: string, server: string): Registration {
  const out: Registration = { source: 'WHOIS', server, registry: server };
  const values = (key: RegExp) =>
    text
      .split(/\r?\n/)
      .map((line) => /^\s*([^:]+):\s*(.*?)\s*$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null && key.test(m[1]!.trim()) && m[2]!.length > 0)
      .map((m) => m[2]!);
  const first = (key: RegExp) => values(key)[0];
  const registrar = first(/^Registrar$/i);
  if (registrar) out.registrar = registrar;
  const created = first(/^Creat(ion|ed) Date$/i);
  if (created) out.created = created;
  const updated = first(/^Updated Date$/i);
  if (updated) out.updated = updated;
  const expires = first(
    /^(Registry Expiry Date|Registrar Registration Expiration Date|Expir(y|ation) Date)$/i,
  );
  if (expires) out.expires = expires;
  const statuses = values(/^Domain Status$/i).map((s) => s.split(/\s+/)[0]!);
  if (statuses.length > 0) out.statuses = statuses;
  const ns = values(/^Name Server$/i).map(domainText);
  if (ns.length > 0) out.nameservers = ns;
  const dnssec = first(/^DNSSEC$/i);
  if (dnssec) out.dnssecSigned = /^signed/i.test(dnssec);
  const email = first(/^Registrar Abuse Contact Email$/i);
  if (email) out.abuseEmail = email;
  const phone = first(/^Registrar Abuse Contact Phone$/i);
  if (phone) out.abusePhone = phone;
  if (!out.registrar && !out.expires && !out.created)
    throw new Error(
      `the WHOIS answer of ${server} holds no registration data (no Registrar, Creation or Expiry Date)`,
    );
  return out;
}

export type ExpiryState =
  | { state: 'unknown'; message: string }
  | { state: 'ok' | 'expiring' | 'expired'; message: string; expires: string };

/** Whether the registration expires within `withinMs` of `now` (or has expired). */
export function expiryState(
  registration: Registration | undefined,
  now: number,
  withinMs: number,
): ExpiryState {
  if (!registration?.expires)
    return { state: 'unknown', message: 'the registration data has no expiry date' };
  const at = Date.parse(registration.expires);
  if (Number.isNaN(at))
    return { state: 'unknown', message: `the expiry date ${registration.expires} cannot be read` };
  const days = Math.floor((at - now) / 86_400_000);
  if (at <= now)
    return {
      state: 'expired',
      expires: registration.expires,
      message: `the registration expired on ${registration.expires}; renew it with ${registration.registrar ?? 'the registrar'}`,
    };
  if (at - now <= withinMs)
    return {
      state: 'expiring',
      expires: registration.expires,
      message: `the registration expires on ${registration.expires} (in ${days} days); renew it with ${registration.registrar ?? 'the registrar'}`,
    };
  return {
    state: 'ok',
    expires: registration.expires,
    message: `the registration runs until ${registration.expires}`,
  };
}
