/**
 * What an ExternalDNS webhook provider holds for a zone, in the contract kit's `HeldZone`, read from
 * the provider's own listing: the records under the zone's origin, without ExternalDNS's TXT registry
 * ownership records (TXT records whose value starts `heritage=`). Targets are ExternalDNS's spelling
 * (names without the trailing dot); they are made absolute here before parsing.
 */
import { heldFromRecords } from '../../src/backends/contract/held.ts';
import type { HeldZone } from '../../src/backends/contract/kit.ts';
import type { Endpoint } from './externaldns-webhook.ts';

function absoluteTarget(type: string, target: string): string {
  const dot = (n: string) => (n.endsWith('.') ? n : `${n}.`);
  switch (type) {
    case 'CNAME':
    case 'NS':
    case 'PTR':
      return dot(target);
    case 'MX':
    case 'SRV': {
      const fields = target.trim().split(/\s+/);
      fields[fields.length - 1] = dot(fields.at(-1)!);
      return fields.join(' ');
    }
    default:
      return target;
  }
}

export function isRegistryRecord(e: Endpoint): boolean {
  return e.recordType === 'TXT' && /^"?heritage=/.test(e.targets?.[0] ?? '');
}

export function heldZone(origin: string, listing: Endpoint[]): HeldZone | undefined {
  const o = origin.toLowerCase();
  const records = listing
    .filter((e) => {
      const n = `${e.dnsName.toLowerCase()}.`;
      return (n === o || n.endsWith(`.${o}`)) && !isRegistryRecord(e);
    })
    .flatMap((e) =>
      (e.targets ?? []).map((t) => ({
        owner: `${e.dnsName.toLowerCase()}.`,
        type: e.recordType,
        rdata: absoluteTarget(e.recordType, t),
      })),
    );
  return records.length === 0 ? undefined : heldFromRecords(origin, records);
}
