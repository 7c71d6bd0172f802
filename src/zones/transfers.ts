/**
 * Zone transfers (RFC 5936, RFC 1995, RFC 1996), the part that is plain data and rules: a class's
 * transfer settings with their secrets read (`ResolvedTransfers`, what the controller hands a backend
 * and the built-in server hands its DNS workers), the checks the schema cannot make, and the serials
 * secondaries report. The built-in server's `TransferPolicy` and the SOA probe build on it.
 */
import { isIP } from 'node:net';
import type { DNSZone, UpdateRule } from '../api/dnszone.ts';
import type { TransfersSpec } from '../api/dnszoneclass.ts';
import type { SecretResolver } from '../api/secret-ref.ts';
import { parseTsigKey } from '../dns/tsig.ts';
import { splitHostPort } from '../util/host-port.ts';
import { serialGreater } from './serial.ts';

/** A class's transfer settings with its secrets read: plain data, sent as is to DNS workers. */
export interface ResolvedTransfers {
  allowFrom: string[];
  requireTsig: boolean;
  /** `usage` absent: transfer only (what keys were for before UPDATE). */
  keys: { name: string; algorithm: string; secret: string; usage?: KeyUsage[] }[];
  notify: { address: string; tsigKey?: string }[];
  journalSize: number;
  /** The zone's RFC 2136 update policy (per zone, not per class): who may UPDATE, and where it writes. */
  update?: ResolvedUpdatePolicy;
}

export type KeyUsage = 'transfer' | 'update';

/** A zone's `updatePolicy` with the namespace its writes belong to. */
export interface ResolvedUpdatePolicy {
  namespace: string;
  rules: UpdateRule[];
}

/** Whether a key may be used for `usage` (no usage list: transfer only). */
export function keyUsable(key: { usage?: readonly KeyUsage[] }, usage: KeyUsage): boolean {
  return (key.usage ?? ['transfer']).includes(usage);
}

/**
 * The class's resolved transfer settings with the zone's update policy added. Rules naming a key the
 * class does not have, or one without usage update, are left out and reported: the rest stay usable.
 */
export function withUpdatePolicy(
  resolved: ResolvedTransfers | undefined,
  zone: Pick<DNSZone, 'metadata' | 'spec'>,
): { resolved: ResolvedTransfers | undefined; problems: string[] } {
  const rules = zone.spec.updatePolicy ?? [];
  if (rules.length === 0) return { resolved, problems: [] };
  const problems: string[] = [];
  if (!resolved) {
    return {
      resolved,
      problems: [
        "updatePolicy names TSIG keys, but the zone's class has no transfers.tsigKeys; add the keys there with usage [update]",
      ],
    };
  }
  const kept: UpdateRule[] = [];
  for (const [i, rule] of rules.entries()) {
    const key = resolved.keys.find((k) => canonicalKeyName(k.name) === canonicalKeyName(rule.key));
    if (!key)
      problems.push(
        `updatePolicy[${i}] key ${JSON.stringify(rule.key)} is not one of the class's transfers.tsigKeys`,
      );
    else if (!keyUsable(key, 'update'))
      problems.push(
        `updatePolicy[${i}] key ${JSON.stringify(rule.key)} is not an update key; add usage: [update] (or [transfer, update]) to it in the class`,
      );
    else kept.push(rule);
  }
  const namespace = zone.metadata.namespace ?? 'default';
  return {
    resolved: kept.length > 0 ? { ...resolved, update: { namespace, rules: kept } } : resolved,
    problems,
  };
}

export const DEFAULT_JOURNAL_SIZE = 100;

/**
 * Reads the secrets of `spec` (from the zone's class) into plain data, and checks what the schema's
 * patterns cannot: that every allowFrom entry is an address or network, every secret valid base64,
 * every notify port in range and every notify tsigKey one of tsigKeys. Throws an Error naming each
 * problem; the controller then turns transfers off for the class's zones (they keep being served) and
 * shows the message in the zone's Accepted condition — rather than failing every zone reconcile.
 */
export async function resolveTransfers(
  spec: TransfersSpec | undefined,
  secrets: SecretResolver,
): Promise<ResolvedTransfers | undefined> {
  if (!spec) return undefined;
  const keys = [];
  for (const key of spec.tsigKeys ?? []) {
    keys.push({
      name: key.name,
      algorithm: key.algorithm,
      secret: await secrets(key.secretRef),
      ...(key.usage ? { usage: [...key.usage] } : {}),
    });
  }
  const resolved: ResolvedTransfers = {
    allowFrom: spec.allowFrom ?? [],
    requireTsig: spec.requireTsig ?? keys.length > 0,
    keys,
    notify: (spec.notify ?? []).map((n) => ({
      address: n.address,
      ...(n.tsigKey ? { tsigKey: n.tsigKey } : {}),
    })),
    journalSize: spec.journalSize ?? DEFAULT_JOURNAL_SIZE,
  };
  const problems = transfersProblems(resolved);
  if (problems.length > 0) throw new Error(problems.join('; '));
  return resolved;
}

/** What is wrong with resolved transfer settings (empty when nothing is). */
export function transfersProblems(resolved: ResolvedTransfers): string[] {
  const problems: string[] = [];
  for (const [i, cidr] of resolved.allowFrom.entries()) {
    if (!parseNetwork(cidr)) {
      problems.push(
        `allowFrom[${i}] ${JSON.stringify(cidr)} is not an IP address or network; write e.g. "192.0.2.0/24" or "2001:db8::/32"`,
      );
    }
  }
  const keyNames = new Set<string>();
  for (const [i, key] of resolved.keys.entries()) {
    try {
      keyNames.add(parseTsigKey(key).name);
    } catch (e) {
      problems.push(`tsigKeys[${i}]: ${(e as Error).message}`);
    }
  }
  for (const [i, n] of resolved.notify.entries()) {
    const { port } = splitHostPort(n.address);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      problems.push(`notify[${i}] ${JSON.stringify(n.address)}: the port must be 1 to 65535`);
    }
    if (n.tsigKey !== undefined && !keyNames.has(canonicalKeyName(n.tsigKey))) {
      const known = resolved.keys.map((k) => k.name).join(', ');
      problems.push(
        `notify[${i}] tsigKey ${JSON.stringify(n.tsigKey)} is not one of tsigKeys${known ? ` (${known})` : ' (none set)'}`,
      );
    } else if (n.tsigKey !== undefined) {
      const key = resolved.keys.find((k) => canonicalKeyName(k.name) === canonicalKeyName(n.tsigKey!));
      if (key && !keyUsable(key, 'transfer'))
        problems.push(
          `notify[${i}] tsigKey ${JSON.stringify(n.tsigKey)} is an update-only key; NOTIFY is signed with a transfer key (add transfer to its usage, or name another key)`,
        );
    }
  }
  return problems;
}

/** An allowFrom entry: an address (one host) or a network in CIDR form; undefined when it is neither. */
export function parseNetwork(
  cidr: string,
): { address: string; prefix: number | undefined; family: 'ipv4' | 'ipv6' } | undefined {
  const [address, bits, extra] = cidr.split('/');
  if (address === undefined || extra !== undefined) return undefined;
  const version = isIP(address);
  if (version === 0) return undefined;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) return { address, prefix: undefined, family };
  if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > (version === 4 ? 32 : 128)) return undefined;
  return { address, prefix: Number(bits), family };
}

/** A key name as parseTsigKey spells it: lowercase, absolute. */
export function canonicalKeyName(name: string): string {
  return `${name.toLowerCase().replace(/\.$/, '')}.`;
}

/** What one secondary answered for a zone's SOA. */
export interface SoaProbeResult {
  target: string;
  /** The serial it serves, when it answered authoritatively with the zone's SOA. */
  serial?: number;
  /** Why there is no serial: timeout, an rcode, not authoritative, a TSIG failure. */
  error?: string;
}

/** The highest serial (RFC 1982 §3.2 order) among the answers, if any answered. */
export function highestSerial(results: readonly SoaProbeResult[]): number | undefined {
  let highest: number | undefined;
  for (const r of results) {
    if (r.serial === undefined) continue;
    if (highest === undefined || serialGreater(r.serial, highest)) highest = r.serial;
  }
  return highest;
}
