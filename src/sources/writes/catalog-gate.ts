import { API_VERSION } from '../../api/meta.ts';
import type { ResourceStore } from '../../control/resource-store.ts';
import { type Name, nameEquals, nameKey } from '../../dns/name.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { PendingAtName, WriteGate } from '../../writes/record-writer.ts';
import { WRITTEN_BY_LABEL } from '../../writes/write-request.ts';
import { cutRefusal, cutsAbove } from '../../zones/assemble.ts';
import type { Catalog } from '../../zones/catalog.ts';
import { object, type Part, Refusal } from '../../zones/refusal.ts';
import type { ResourceKey } from '../../zones/resource-key.ts';
import type { ZoneModel } from '../../zones/zone-model.ts';

/**
 * The record writer's gate on the controller's catalog and store: a write is admitted where a
 * DNSRecordSet of the credential's namespace with that absolute name and type would be adopted, by the
 * same code (`Catalog.resolve`: delegations, the DS at a cut, no NS or CNAME above a child zone), and
 * published: not below a cut (`cutRefusal`), not losing to an older CNAME or ALIAS at its name (the
 * zone's model of `models`, `ZoneModel.writeConflict`; a zone not modelled yet publishes nothing).
 */
export function catalogGate(
  catalog: Catalog,
  store: ResourceStore,
  models?: (zone: ResourceKey) => ZoneModel | undefined,
): WriteGate {
  const resolveAs = (namespace: string, fqdn: Name, type: RecordTypeName) =>
    catalog.resolve({
      apiVersion: API_VERSION,
      kind: 'DNSRecordSet',
      metadata: { name: 'write-probe', namespace },
      spec: { name: fqdn, type, records: ['-'] },
    });
  return {
    admit(namespace: string, fqdn: Name, type: RecordTypeName) {
      const resolution = resolveAs(namespace, fqdn, type);
      // The caller reads the catalog's reason without the objects of other namespaces; the log all of it.
      if (!resolution.resolved)
        return { ok: false, message: resolution.refusal.text({ namespace }), detail: resolution.message };
      const verdict = catalog.zoneVerdict(resolution.zone);
      if (!verdict?.accepted) return { ok: false, message: `no served zone contains ${fqdn}` };
      // At or below a cut inside the zone, only what assembleZone serves there (cutRefusal): a write
      // it would judge occluded is refused now rather than stored and never served. An NS write at
      // `fqdn` is the cut itself, or a second one beside it (the owners' rules decide that).
      const cuts = cutsAbove(
        fqdn,
        verdict.origin,
        catalog.nsAtOrAbove(resolution.zone, verdict.origin, fqdn),
      ).filter((c) => type !== 'NS' || !nameEquals(c.owner, fqdn));
      const refused = cutRefusal(fqdn, type, cuts);
      if (refused)
        return {
          ok: false,
          message:
            refused.reason === 'Conflict'
              ? `${fqdn} is a delegation point; only NS and DS records exist there (RFC 1034 §4.2.1): write ${type} in the delegated zone`
              : `${fqdn} is below the delegation ${refused.cut.owner} and would never be served (RFC 1034 §4.2.1); write it in the delegated zone`,
        };
      return { ok: true, origin: verdict.origin };
    },
    otherOwner(namespace: string, fqdn: Name, type: RecordTypeName, own: ResourceKey) {
      const resolution = resolveAs(namespace, fqdn, type);
      // Even where the namespace may not publish, the zone holding the name says who defines it.
      const zoneKey = resolution.zone;
      if (zoneKey === undefined) return undefined;
      const verdict = catalog.zoneVerdict(zoneKey);
      if (
        verdict?.accepted &&
        (type === 'SOA' || (type === 'NS' && nameKey(fqdn) === nameKey(verdict.origin)))
      )
        return namespaceOf(zoneKey) === namespace ? `DNSZone ${zoneKey}` : `zone ${verdict.origin} itself`;
      const wanted = nameKey(fqdn);
      for (const member of catalog.zoneMembers(zoneKey)) {
        if (member.key === own || !member.current) continue;
        const { recordSet, fqdn: at } = member.current;
        if (recordSet.spec.type === type && nameKey(at) === wanted)
          return namespaceOf(member.key) === namespace
            ? `DNSRecordSet ${member.key}`
            : 'a DNSRecordSet of another namespace';
      }
      return undefined;
    },
    exclusivity(
      namespace: string,
      fqdn: Name,
      type: RecordTypeName,
      key: ResourceKey,
      pending: PendingAtName,
    ) {
      const resolution = resolveAs(namespace, fqdn, type);
      if (!resolution.resolved) return undefined;
      const conflict = models?.(resolution.zone)?.writeConflict(key, fqdn, type, pending);
      // One writer per name and type stays as it is: stored, served once the older one goes.
      if (conflict?.rule !== 'exclusive') return undefined;
      const refusal = new Refusal('NAME_CONFLICT', [
        `${fqdn} ${type} cannot coexist with the ${conflict.type} published by `,
        publisher(conflict.by),
        ` (${conflict.why}); the zone serves the older ${conflict.type} and would never serve this ${type}: write it at another name, or delete the ${conflict.type} where it is defined first`,
      ]);
      return { message: refusal.text({ namespace }), detail: refusal.text() };
    },
    existing(key: ResourceKey) {
      const object = store.get('DNSRecordSet', key);
      return object ? { writtenBy: object.metadata.labels?.[WRITTEN_BY_LABEL] } : undefined;
    },
  };
}

/**
 * Who published an RRset, as the zone model names it (`DNSRecordSet ns/name`, `DNSZone ns/name` for a
 * child zone's delegation, `DNSZoneClass name`, `the zone`): an object of a namespace is a part only
 * that namespace reads by name.
 */
function publisher(by: string): Part {
  const space = by.indexOf(' ');
  const kind = by.slice(0, space);
  return kind === 'DNSRecordSet' || kind === 'DNSZone' ? object(kind, by.slice(space + 1)) : by;
}

function namespaceOf(key: ResourceKey): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}
