/**
 * Whether a record read back from a provider (`GET /records/...`) is the record that was pushed, in the
 * protocol's meaning rather than its spelling. Providers answer in their own canonical form: Zonekeeper's
 * provider returns names lower-case without the trailing dot, SRV metadata as priority/weight/port and
 * IPv6 addresses compressed (RFC 5952 §4), so a literal comparison would call every such record drifted
 * and push it again at every check. Pure.
 */
import { formatIPv6, parseIPv6 } from '../dns/ip.ts';
import type { HomelabRecord, HomelabRecordMetadata } from './protocol.ts';

/** Types whose values are domain names (RFC 1035 §3.3.1, §3.3.9, §3.3.11; RFC 2782 target). */
const NAME_VALUED = new Set(['CNAME', 'NS', 'MX', 'SRV']);

/**
 * One value in its comparable form: names compared without case (RFC 4343 §3) and with or without the
 * trailing dot (the protocol's names are always absolute); IPv6 addresses as addresses (RFC 5952 §4);
 * A and TXT values exactly.
 */
export function comparableValue(type: string, value: string): string {
  if (NAME_VALUED.has(type)) {
    const lower = value.toLowerCase();
    return lower.length > 1 && lower.endsWith('.') ? lower.slice(0, -1) : lower;
  }
  if (type === 'AAAA') {
    const bytes = parseIPv6(value);
    return bytes ? formatIPv6(bytes) : value.toLowerCase();
  }
  return value;
}

const METADATA_FIELDS = [
  'priority',
  'weight',
  'port',
] as const satisfies readonly (keyof HomelabRecordMetadata)[];

/** Metadata field by field (the order a provider writes its keys in does not matter). */
export function sameMetadata(
  want: HomelabRecordMetadata | undefined,
  have: HomelabRecordMetadata | undefined,
): boolean {
  return METADATA_FIELDS.every((f) => want?.[f] === have?.[f]);
}

/**
 * Whether the provider's record is the pushed one: values as a set in their comparable form; TTL and
 * metadata only when the provider reports them (a provider that does not know `metadata` omits it).
 */
export function sameHomelabContent(
  want: HomelabRecord,
  have: Pick<HomelabRecord, 'values' | 'ttl' | 'metadata'>,
): boolean {
  const norm = (values: readonly string[]) => values.map((v) => comparableValue(want.type, v)).sort();
  const a = norm(want.values);
  const b = norm(have.values ?? []);
  if (a.length !== b.length || a.some((v, i) => v !== b[i])) return false;
  if (have.ttl !== undefined && want.ttl !== undefined && have.ttl !== want.ttl) return false;
  if (have.metadata !== undefined && !sameMetadata(want.metadata, have.metadata)) return false;
  return true;
}
