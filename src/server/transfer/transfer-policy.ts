import net from 'node:net';
import type { UpdateRule } from '../../api/dnszone.ts';
import { keyring, parseTsigKey, type TsigKey, type TsigKeyring } from '../../dns/tsig.ts';
import { splitHostPort } from '../../util/host-port.ts';
import { canonicalKeyName, keyUsable, parseNetwork, type ResolvedTransfers } from '../../zones/transfers.ts';

/** The policy a DNS process applies to transfer requests. */
export class TransferPolicy {
  /** The settings this policy was made from (sent to DNS workers). */
  readonly resolved: ResolvedTransfers;
  readonly requireTsig: boolean;
  /** Keys for transfers, signed SOA queries and NOTIFY (usage transfer; the default). */
  readonly keys: TsigKeyring;
  readonly keyList: TsigKey[];
  /** Keys for RFC 2136 UPDATE (usage update): an update-only key is not in `keys`. */
  readonly updateKeys: TsigKeyring;
  /** The zone's update policy and the namespace its writes belong to; undefined: UPDATE refused. */
  readonly update: { namespace: string; rules: UpdateRule[] } | undefined;
  readonly notify: { host: string; port: number; key?: TsigKey }[];
  readonly journalSize: number;
  private readonly allow = new net.BlockList();
  private readonly anyAllowed: boolean;

  constructor(resolved: ResolvedTransfers) {
    this.resolved = resolved;
    this.requireTsig = resolved.requireTsig;
    this.keyList = resolved.keys.filter((k) => keyUsable(k, 'transfer')).map((k) => parseTsigKey(k));
    this.keys = keyring(this.keyList);
    this.updateKeys = keyring(
      resolved.keys.filter((k) => keyUsable(k, 'update')).map((k) => parseTsigKey(k)),
    );
    this.update = resolved.update;
    this.journalSize = resolved.journalSize;
    // resolveTransfers refuses settings with an invalid entry; should one get here anyway, it allows
    // nothing (an exception here would fail every reconcile of the zone).
    let networks = 0;
    for (const cidr of resolved.allowFrom) {
      const network = parseNetwork(cidr);
      if (!network) continue;
      if (network.prefix === undefined) this.allow.addAddress(network.address, network.family);
      else this.allow.addSubnet(network.address, network.prefix, network.family);
      networks++;
    }
    this.anyAllowed = networks > 0;
    this.notify = resolved.notify.map((n) => {
      const { host, port } = splitHostPort(n.address);
      const key = n.tsigKey ? this.keyList.find((k) => k.name === canonicalKeyName(n.tsigKey!)) : undefined;
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
