/**
 * Record content as the PowerDNS HTTP API wants it. PowerDNS refuses content that is not in its own
 * canonical text form ("Not in expected format (parsed as '...')"), and reads it back in that form, so
 * we print what it prints and compare what it holds semantically (by parsing it back).
 */
import { bytesToBase64 } from '../../dns/base64.ts';
import { formatIPv4, formatIPv6 } from '../../dns/ip.ts';
import type { Name } from '../../dns/name.ts';
import { binaryFromBytes } from '../../dns/octets.ts';
import { escapeQuotedText } from '../../dns/presentation.ts';
import { parseRdata, printRdata, type Rdata, rdataEquals, type SvcbRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';

/**
 * SvcParamKeys PowerDNS 4.7 knows by name; later keys (dohpath, RFC 9461; ohttp, RFC 9540) are written
 * in the generic `keyNNNNN="..."` form (RFC 9460 §2.1), which every version accepts or rewrites.
 */
const PDNS_SVC_KEY_NAMES: readonly string[] = [
  'mandatory',
  'alpn',
  'no-default-alpn',
  'port',
  'ipv4hint',
  'ech',
  'ipv6hint',
];

function keyName(key: number): string {
  return PDNS_SVC_KEY_NAMES[key] ?? `key${key}`;
}

/** An ALPN id in PowerDNS's comma-separated list: `,` and `\` escaped (RFC 9460 Appendix A.1). */
function alpnId(id: string): string {
  let out = '';
  for (const ch of id) {
    const c = ch.charCodeAt(0);
    if (ch === ',' || ch === '\\') out += `\\${ch}`;
    else if (c <= 0x20 || c >= 0x7f || ch === '"') out += `\\${String(c).padStart(3, '0')}`;
    else out += ch;
  }
  return out;
}

/** SVCB/HTTPS as PowerDNS prints it: lists unquoted, `ech` and unnamed keys quoted. */
function svcbContent(r: SvcbRdata): string {
  let s = `${r.priority} ${r.target}`;
  const params = [...r.params].sort((a, b) => a.key - b.key);
  for (const { key, value: v } of params) {
    switch (key) {
      case 0: {
        const names: string[] = [];
        for (let i = 0; i + 1 < v.length; i += 2) names.push(keyName((v[i]! << 8) | v[i + 1]!));
        s += ` mandatory=${names.join(',')}`;
        break;
      }
      case 1: {
        const ids: string[] = [];
        for (let i = 0; i < v.length; ) {
          const len = v[i]!;
          ids.push(alpnId(binaryFromBytes(v, i + 1, i + 1 + len)));
          i += 1 + len;
        }
        s += ` alpn=${ids.join(',')}`;
        break;
      }
      case 2:
        s += ' no-default-alpn';
        break;
      case 3:
        s += ` port=${(v[0]! << 8) | v[1]!}`;
        break;
      case 4: {
        const addrs: string[] = [];
        for (let i = 0; i + 3 < v.length; i += 4) addrs.push(formatIPv4(v, i));
        s += ` ipv4hint=${addrs.join(',')}`;
        break;
      }
      case 5:
        s += ` ech="${bytesToBase64(v)}"`;
        break;
      case 6: {
        const addrs: string[] = [];
        for (let i = 0; i + 15 < v.length; i += 16) addrs.push(formatIPv6(v, i));
        s += ` ipv6hint=${addrs.join(',')}`;
        break;
      }
      default:
        s += ` key${key}="${escapeQuotedText(binaryFromBytes(v))}"`;
    }
  }
  return s;
}

/** The content string PowerDNS stores for one record (its canonical zone-file text). */
export function powerDnsContent(rdata: Rdata): string {
  if (rdata.type === 'SVCB' || rdata.type === 'HTTPS') return svcbContent(rdata);
  // Every other supported type prints the same in both: absolute names, quoted strings, lowercase hex.
  return printRdata(rdata);
}

/** Content PowerDNS holds, parsed with our strict parser; undefined when it does not parse. */
export function parsePowerDnsContent(type: RecordTypeName, content: string, origin: Name): Rdata | undefined {
  try {
    return parseRdata(type, content, origin);
  } catch {
    return undefined;
  }
}

/**
 * Whether the records PowerDNS holds are exactly `desired` (as sets): first by text (PowerDNS reads
 * back what we wrote), then by meaning (it may print a name's case or a list differently).
 */
export function sameRecords(
  type: RecordTypeName,
  held: readonly string[],
  desired: readonly Rdata[],
  desiredContent: readonly string[],
  origin: Name,
): boolean {
  if (held.length !== desired.length) return false;
  const want = new Set(desiredContent);
  if (want.size === held.length && new Set(held).size === held.length && held.every((c) => want.has(c)))
    return true;
  const parsed: Rdata[] = [];
  for (const c of held) {
    const r = parsePowerDnsContent(type, c, origin);
    if (r === undefined) return false;
    parsed.push(r);
  }
  const used = new Array<boolean>(parsed.length).fill(false);
  for (const d of desired) {
    const i = parsed.findIndex((p, j) => !used[j] && rdataEquals(p, d));
    if (i < 0) return false;
    used[i] = true;
  }
  return true;
}
