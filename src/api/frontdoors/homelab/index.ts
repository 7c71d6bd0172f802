/**
 * The homelab DNS operator's kinds as front doors. They are `external`: a DNSRecord is pushed to the
 * provider its DNSClass names, over the HMAC-signed webhook protocol, and never becomes a record set
 * of Zonekeeper's own zones (ADR 0019). The seam gives them their schema, admission, CRDs, `validate`
 * and both sources; the homelab controller (`src/control/homelab/`) reads them and owns their status
 * and finalizer.
 */
import { AGE_COLUMN, READY_COLUMN } from '../../kind.ts';
import type { FrontDoor } from '../front-door.ts';
import {
  type DNSClassSpec,
  type DNSClassStatus,
  type DNSRecordSpec,
  type DNSRecordStatus,
  dnsClassSpecSchema,
  dnsClassStatusSchema,
  dnsRecordSpecSchema,
  dnsRecordStatusSchema,
} from './schema.ts';

export * from './schema.ts';

export const HOMELAB_GROUP = 'dns.homelab.mortenolsen.pro';
export const HOMELAB_VERSION = 'v1alpha1';
export const HOMELAB_FINALIZER = 'dns.homelab.mortenolsen.pro/finalizer';

export const dnsClassFrontDoor: FrontDoor<DNSClassSpec, DNSClassStatus> = {
  group: HOMELAB_GROUP,
  version: HOMELAB_VERSION,
  kind: 'DNSClass',
  plural: 'dnsclasses',
  singular: 'dnsclass',
  listKind: 'DNSClassList',
  shortNames: ['dnsc'],
  scope: 'Cluster',
  description: 'DNSClass: a DNS provider reached through the homelab DNS webhook protocol.',
  spec: dnsClassSpecSchema,
  status: dnsClassStatusSchema,
  printerColumns: [
    { name: 'Server', type: 'string', jsonPath: '.spec.server' },
    { name: 'Health', type: 'string', jsonPath: '.status.health.status' },
    READY_COLUMN,
    AGE_COLUMN,
  ],
  finalizer: HOMELAB_FINALIZER,
  merge: 'none',
  external: true,
  translate: () => [],
  project: ({ object }) => object.status ?? {},
};

export const dnsRecordFrontDoor: FrontDoor<DNSRecordSpec, DNSRecordStatus> = {
  group: HOMELAB_GROUP,
  version: HOMELAB_VERSION,
  kind: 'DNSRecord',
  plural: 'dnsrecords',
  singular: 'dnsrecord',
  listKind: 'DNSRecordList',
  shortNames: ['dnsr'],
  scope: 'Namespaced',
  description: 'DNSRecord: one DNS record pushed to the provider of its DNSClass.',
  spec: dnsRecordSpecSchema,
  status: dnsRecordStatusSchema,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'FQDN', type: 'string', jsonPath: '.status.fqdn' },
    { name: 'Class', type: 'string', jsonPath: '.spec.dnsClassRef.name' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
    AGE_COLUMN,
  ],
  finalizer: HOMELAB_FINALIZER,
  merge: 'none',
  external: true,
  translate: () => [],
  project: ({ object }) => object.status ?? {},
};

// biome-ignore lint/suspicious/noExplicitAny: the registry holds doors of every spec type
export const HOMELAB_FRONT_DOORS: readonly FrontDoor<any, any>[] = [dnsClassFrontDoor, dnsRecordFrontDoor];
