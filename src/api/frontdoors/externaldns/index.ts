/**
 * ExternalDNS's `externaldns.k8s.io/v1alpha1` `DNSEndpoint` as a front door, in the upstream CRD's
 * shape (docs/compat/externaldns.md lists every field): each of `spec.endpoints` becomes an RRset of
 * the object's namespace — its absolute name, type, TTL and records — adopted by the deepest zone that
 * contains the name and admitted by that zone's delegations like any record set of the namespace.
 * `status.observedGeneration` says which generation Zonekeeper has judged (every RRset accepted or
 * refused); the upstream status has no room for more.
 */
import type { DNSRecordSetStatus } from '../../dnsrecordset.ts';
import { type Infer, type Problem, s } from '../../schema.ts';
import type { FrontDoor, OutputStatus, TranslatedOutput } from '../front-door.ts';
import { ENDPOINT_TYPES, targetsToRecords } from './targets.ts';

export const EXTERNALDNS_GROUP = 'externaldns.k8s.io';
export const EXTERNALDNS_VERSION = 'v1alpha1';
/** Named for the seam; never put on objects (`holdsFinalizer`: ExternalDNS puts none either). */
export const EXTERNALDNS_FINALIZER = 'externaldns.k8s.io/zonekeeper';

const endpointSchema = s.object(
  {
    dnsName: s.optional(s.string({ description: 'The hostname of the DNS record' })),
    targets: s.optional(
      s.array(s.string({ description: 'A target.' }), {
        description: 'The targets the DNS record points to',
      }),
    ),
    recordType: s.optional(
      s.string({ description: 'RecordType type of record, e.g. CNAME, A, AAAA, SRV, TXT etc' }),
    ),
    setIdentifier: s.optional(
      s.string({
        description:
          "Identifier to distinguish multiple records with the same name and type (e.g. Route53 records with routing policies other than 'simple')",
      }),
    ),
    recordTTL: s.optional(s.integer({ description: 'TTL for the record', format: 'int64' })),
    labels: s.optional(s.map(s.string(), { description: 'Labels stores labels defined for the Endpoint' })),
    providerSpecific: s.optional(
      s.array(
        s.object(
          {
            name: s.optional(s.string({ description: 'Name.' })),
            value: s.optional(s.string({ description: 'Value.' })),
          },
          {
            description:
              'ProviderSpecificProperty holds the name and value of a configuration which is specific to individual DNS providers',
          },
        ),
        { description: 'ProviderSpecific stores provider specific config' },
      ),
    ),
  },
  { description: 'Endpoint is a high-level way of a connection between a service and an IP' },
);

export const dnsEndpointSpecSchema = s.object(
  { endpoints: s.optional(s.array(endpointSchema, { description: 'The endpoints.' })) },
  { description: 'DNSEndpointSpec defines the desired state of DNSEndpoint' },
);

export const dnsEndpointStatusSchema = s.object(
  {
    observedGeneration: s.optional(
      s.integer({ description: 'The generation observed by the external-dns controller.', format: 'int64' }),
    ),
  },
  { description: 'DNSEndpointStatus defines the observed state of DNSEndpoint' },
);

export type DNSEndpointSpec = Infer<typeof dnsEndpointSpecSchema>;
export type DNSEndpointStatus = Infer<typeof dnsEndpointStatusSchema>;
type EndpointSpec = NonNullable<DNSEndpointSpec['endpoints']>[number];

/** An endpoint's RRset: `undefined` for one that maps onto nothing (no name, type or targets). */
function endpointRRset(e: EndpointSpec): { fqdn: string; type: string; key: string } | undefined {
  if (!e.dnsName || !e.recordType || !e.targets || e.targets.length === 0) return undefined;
  const fqdn = e.dnsName.endsWith('.') ? e.dnsName : `${e.dnsName}.`;
  const type = e.recordType.toUpperCase();
  return { fqdn, type, key: `${type}:${fqdn.toLowerCase()}` };
}

export const dnsEndpointFrontDoor: FrontDoor<DNSEndpointSpec, DNSEndpointStatus> = {
  group: EXTERNALDNS_GROUP,
  version: EXTERNALDNS_VERSION,
  kind: 'DNSEndpoint',
  plural: 'dnsendpoints',
  singular: 'dnsendpoint',
  listKind: 'DNSEndpointList',
  shortNames: [],
  scope: 'Namespaced',
  description:
    'DNSEndpoint is a contract that a user-specified CRD must implement to be used as a source for external-dns.\n' +
    'The user-specified CRD should also have the status sub-resource.',
  spec: dnsEndpointSpecSchema,
  status: dnsEndpointStatusSchema,
  printerColumns: [],
  // The group is ExternalDNS's, a protected *.k8s.io group: its CRD carries the review that approved it.
  crdAnnotations: {
    'api-approved.kubernetes.io': 'https://github.com/kubernetes-sigs/external-dns/pull/2007',
  },
  finalizer: EXTERNALDNS_FINALIZER,
  merge: 'none',
  // Like ExternalDNS, no finalizer: deleting a DNSEndpoint is never held up; its records go with it.
  holdsFinalizer: () => false,
  admit(object) {
    const problems: Problem[] = [];
    for (const [i, e] of (object.spec.endpoints ?? []).entries()) {
      const at = `spec.endpoints[${i}]`;
      if (!e.dnsName)
        problems.push({
          path: `${at}.dnsName`,
          code: 'Required',
          message: 'DNSEndpoint: dnsName is required',
        });
      const type = e.recordType?.toUpperCase();
      if (!type)
        problems.push({
          path: `${at}.recordType`,
          code: 'Required',
          message: 'DNSEndpoint: recordType is required',
        });
      else if (!ENDPOINT_TYPES.has(type as never))
        problems.push({
          path: `${at}.recordType`,
          code: 'TypeNotSupported',
          message: `DNSEndpoint: record type ${e.recordType} is not served from a DNSEndpoint here; use one of ${[...ENDPOINT_TYPES].join(', ')}`,
        });
      if (e.recordTTL !== undefined && (e.recordTTL < 0 || e.recordTTL > 2147483647))
        problems.push({
          path: `${at}.recordTTL`,
          code: 'OutOfRange',
          message: 'DNSEndpoint: recordTTL is 0 (the zone default) to 2147483647 seconds',
        });
    }
    return problems;
  },
  translate(object) {
    const out: TranslatedOutput[] = [];
    const seen = new Set<string>();
    for (const e of object.spec.endpoints ?? []) {
      const rrset = endpointRRset(e);
      // One RRset per name and type: a second endpoint for it (another set identifier) is not served.
      if (!rrset || seen.has(rrset.key)) continue;
      seen.add(rrset.key);
      out.push({
        kind: 'DNSRecordSet',
        key: rrset.key,
        spec: {
          // No zoneRef: the catalog adopts it into the deepest zone containing the name.
          name: rrset.fqdn,
          type: rrset.type as never,
          ...(e.recordTTL ? { ttl: e.recordTTL } : {}),
          records: targetsToRecords(rrset.type as never, e.targets ?? []),
        },
      });
    }
    return out;
  },
  project({ object, outputs, problems }): DNSEndpointStatus {
    const previous = object.status?.observedGeneration;
    const generation = object.metadata.generation;
    const keep = previous !== undefined ? { observedGeneration: previous } : {};
    // A version refused by the schema or admission was not taken in: the generation stays where it was.
    if (generation === undefined || (problems && problems.length > 0)) return keep;
    // Taken in once every record set of this generation was judged (accepted or refused, with a reason).
    const judged = outputs.every((o: OutputStatus) =>
      ((o.status as DNSRecordSetStatus | undefined)?.conditions ?? []).some(
        (c) => c.type === 'Accepted' && c.observedGeneration === generation,
      ),
    );
    return judged ? { observedGeneration: generation } : keep;
  },
};

// biome-ignore lint/suspicious/noExplicitAny: the registry holds doors of every spec type
export const EXTERNALDNS_FRONT_DOORS: readonly FrontDoor<any, any>[] = [dnsEndpointFrontDoor];
