import net from 'node:net';
import type { TransfersSpec } from '../../api/dnszoneclass.ts';
import type { SecretResolver } from '../../control/secrets.ts';
import { keyring, parseTsigKey, type TsigKey, type TsigKeyring } from '../../dns/tsig.ts';
import { splitHostPort } from '../alias-resolver.ts';

/** A class's transfer settings with its secrets read: plain data, sent as is to DNS workers. */
export interface ResolvedTransfers {
  allowFrom: string[];
  requireTsig: boolean;
  keys: { name: string; algorithm: string; secret: string }[];
  notify: { address: string; tsigKey?: string }[];
  journalSize: number;
}

export const DEFAULT_JOURNAL_SIZE = 100;

/** Reads the secrets of `spec` (from the zone's class) into plain data. */
export async function resolveTransfers(
  spec: TransfersSpec | undefined,
  secrets: SecretResolver,
): Promise<ResolvedTransfers | undefined> {
  if (!spec) return undefined;
  const keys = [];
  for (const key of spec.tsigKeys ?? []) {
    keys.push({ name: key.name, algorithm: key.algorithm, secret: await secrets(key.secretRef) });
  }
  return {
    allowFrom: spec.allowFrom ?? [],
    requireTsig: spec.requireTsig ?? keys.length > 0,
    keys,
    notify: (spec.notify ?? []).map((n) => ({
      address: n.address,
      ...(n.tsigKey ? { tsigKey: n.tsigKey } : {}),
    })),
    journalSize: spec.journalSize ?? DEFAULT_JOURNAL_SIZE,
  };
}

/** The policy a DNS process applies to transfer requests. */
export class TransferPolicy {
  /** The settings this policy was made from (sent to DNS workers). */
  readonly resolved: ResolvedTransfers;
  readonly requireTsig: boolean;
  readonly keys: TsigKeyring;
  readonly keyList: TsigKey[];
  readonly notify: { host: string; port: number; key?: TsigKey }[];
  readonly journalSize: number;
  private readonly allow = new net.BlockList();
  private readonly anyAllowed: boolean;

  constructor(resolved: ResolvedTransfers) {
    this.resolved = resolved;
    this.requireTsig = resolved.requireTsig;
    this.keyList = resolved.keys.map((k) => parseTsigKey(k));
    this.keys = keyring(this.keyList);
    this.journalSize = resolved.journalSize;
    for (const cidr of resolved.allowFrom) {
      const [address, bits] = cidr.split('/') as [string, string | undefined];
      const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.allow.addAddress(address, family);
      else this.allow.addSubnet(address, Number(bits), family);
    }
    this.anyAllowed = resolved.allowFrom.length > 0;
    this.notify = resolved.notify.map((n) => {
      const { host, port } = splitHostPort(n.address);
      const key = n.tsigKey
        ? this.keyList.find((k) => k.name === `${n.tsigKey!.toLowerCase().replace(/\.$/, '')}.`)
        : undefined;
      return { host, port, ...(key ? { key } : {}) };
    });
  }

  /** Whether a source address may transfer (IPv4-mapped IPv6 addresses count as IPv4). */
  allows(address: string | undefined): boolean {
    if (!this.anyAllowed || !address) return false;
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    if (v4) return this.allow.check(v4, 'ipv4');
    return this.allow.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
  }
}
