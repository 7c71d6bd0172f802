/**
 * The types generated from the schemas must be exactly the API contract other packages code against.
 * These assertions are checked by `tsc`; the test only makes the file part of the test run.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { RecordTypeName } from '../dns/rrtype.ts';
import type * as api from './index.ts';

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

interface SOAOverrides {
  rname?: string;
  refresh?: number;
  retry?: number;
  expire?: number;
  minimum?: number;
}
interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}
interface SecretRef {
  file?: string;
  env?: string;
  namespace?: string;
  name?: string;
  key?: string;
}
interface Transfers {
  allowFrom?: string[];
  requireTsig?: boolean;
  tsigKeys?: {
    name: string;
    algorithm: 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512';
    secretRef: SecretRef;
    usage?: ('transfer' | 'update')[];
  }[];
  notify?: { address: string; tsigKey?: string }[];
  journalSize?: number;
}
interface Rfc2136Key {
  name: string;
  algorithm: 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512';
  secretRef: SecretRef;
}
interface Rfc2136Backend {
  server: string;
  port?: number;
  tsigKey: Rfc2136Key;
  transferKey?: Rfc2136Key;
  resyncSeconds?: number;
  timeoutSeconds?: number;
}
interface PowerDnsBackend {
  url: string;
  serverId?: string;
  apiKeySecretRef: SecretRef;
  zoneKind?: 'Native' | 'Master';
  tls?: { caFile?: string; serverName?: string; insecureSkipVerify?: boolean };
  luaRecords?: boolean;
  resyncSeconds?: number;
  timeoutSeconds?: number;
}
interface HomelabWebhookBackend {
  url: string;
  hmacAuth?: { secretRef: SecretRef; algorithm?: 'SHA256' | 'SHA512' };
  timeoutSeconds?: number;
  resyncSeconds?: number;
}
interface ExternalDnsWebhookBackend {
  url: string;
  timeoutSeconds?: number;
  ownerId?: string;
  txtPrefix?: string;
  txtSuffix?: string;
  txtWildcardReplacement?: string;
  resyncSeconds?: number;
}
interface DNSZoneClassSpec {
  backend: {
    builtin?: Record<string, never>;
    powerdns?: PowerDnsBackend;
    homelabWebhook?: HomelabWebhookBackend;
    rfc2136?: Rfc2136Backend;
    externalDNSWebhook?: ExternalDnsWebhookBackend;
  };
  nameServers: string[];
  transfers?: Transfers;
  zoneNameServers?: string[];
  domainVerification?: { txtRecordPrefix?: string };
  requireVerifiedDomain?: boolean;
  allowPublicSuffixZones?: boolean;
  defaults?: { ttl?: number; soa?: SOAOverrides };
  topology?: { network: string; regions: string[] }[];
  geoip?: {
    databaseFile: string;
    countries?: Record<string, string[]>;
    continents?: Record<string, string[]>;
  };
  changeSafety?: ChangeSafety;
  dnssec?: Dnssec;
}
interface DNSZoneClassStatus {
  conditions?: Condition[];
  observedGeneration?: number;
  zones?: number;
}
interface Delegation {
  namespaces?: string[];
  namespacePatterns?: string[];
  names?: string[];
  types?: RecordTypeName[];
}
interface DNSZoneSpec {
  domainName: string;
  className: string;
  ttl?: number;
  soa?: SOAOverrides;
  delegations?: Delegation[];
  ignore?: { name: string; type?: RecordTypeName }[];
  changeSafety?: ChangeSafety;
  dnssec?: Dnssec;
  updatePolicy?: { key: string; names: string[]; types: RecordTypeName[] }[];
}
interface Dnssec {
  enabled?: boolean;
  algorithm?: 'ECDSAP256SHA256' | 'ECDSAP384SHA384' | 'ED25519';
  denial?: 'NSEC' | 'NSEC3';
  keys?: 'CSK' | 'Split';
  zskLifetimeSeconds?: number;
  kskLifetimeSeconds?: number;
}
interface ChangeSafety {
  enabled?: boolean;
  maxDeletePercent?: number;
  maxUpdatePercent?: number;
}
interface ObjectRef {
  namespace: string;
  name: string;
}
interface DNSZoneStatus {
  observedGeneration?: number;
  serial?: number;
  hash?: string;
  signedAt?: number;
  signing?: string;
  recordCount?: number;
  rrsetCount?: number;
  nameservers?: string[];
  dnssec?: {
    keys?: {
      keyTag: number;
      algorithm: number;
      role: 'CSK' | 'KSK' | 'ZSK';
      active: boolean;
      published?: boolean;
    }[];
    ds?: string[];
    rollover?: {
      kind?: 'ZSK' | 'Algorithm' | 'KSK' | 'Disable';
      phase:
        | 'Active'
        | 'Publish'
        | 'Retire'
        | 'Sign'
        | 'DsChange'
        | 'DsPropagate'
        | 'Unpublish'
        | 'Disabling'
        | 'Unsigned';
      since: string;
      nextStep?: string;
      reason?: string;
      message?: string;
    };
    cds?: 'Published' | 'NotPublished';
  };
  parentZone?: ObjectRef;
  conditions?: Condition[];
}
interface DNSRecordSetSpec {
  zoneRef?: { name: string; namespace?: string };
  name: string;
  type: RecordTypeName;
  ttl?: number;
  records: string[];
  healthCheck?: {
    protocol: 'HTTP' | 'HTTPS' | 'TCP';
    port?: number;
    path?: string;
    host?: string;
    expectStatus?: number[];
    stringMatch?: string;
    intervalSeconds?: number;
    timeoutSeconds?: number;
    failureThreshold?: number;
    successThreshold?: number;
  };
  selection?: {
    policy?: 'All' | 'Ordered' | 'Weighted' | 'Closest' | 'Random' | 'Hashed';
    weights?: Record<string, number>;
    regions?: Record<string, string>;
    whenAllDown?: 'All' | 'None' | 'First';
  };
  placement?: 'SingleRegion' | 'ActiveActive' | 'ActiveHotStandby' | 'ActivePassiveWarm' | 'WeightedCanary';
}
interface DNSRecordSetStatus {
  observedGeneration?: number;
  fqdn?: string;
  zone?: ObjectRef;
  targets?: {
    address: string;
    state: 'Up' | 'Down' | 'Unknown';
    lastTransitionTime?: string;
    lastError?: string;
  }[];
  conditions?: Condition[];
}
interface DomainSpec {
  domainName: string;
  className?: string;
}
interface DomainStatus {
  observedGeneration?: number;
  apex?: string;
  verification?: {
    dnsRecord?: { name: string; type: string; content: string };
    httpToken?: { url: string; body: string };
    delegatedNameServers?: string[];
  };
  registration?: {
    source: 'RDAP' | 'WHOIS';
    server: string;
    registrar?: string;
    registry?: string;
    created?: string;
    updated?: string;
    expires?: string;
    statuses?: string[];
    dnssecSigned?: boolean;
    nameservers?: string[];
    abuseEmail?: string;
    abusePhone?: string;
    refreshed: string;
  };
  conditions?: Condition[];
}

export const contract = {
  SOAOverrides: true satisfies Equals<api.SOAOverrides, SOAOverrides>,
  Condition: true satisfies Equals<api.Condition, Condition>,
  DNSZoneClassSpec: true satisfies Equals<api.DNSZoneClassSpec, DNSZoneClassSpec>,
  DNSZoneClassStatus: true satisfies Equals<api.DNSZoneClassStatus, DNSZoneClassStatus>,
  Delegation: true satisfies Equals<api.Delegation, Delegation>,
  DNSZoneSpec: true satisfies Equals<api.DNSZoneSpec, DNSZoneSpec>,
  ObjectRef: true satisfies Equals<api.ObjectRef, ObjectRef>,
  DNSZoneStatus: true satisfies Equals<api.DNSZoneStatus, DNSZoneStatus>,
  DNSRecordSetSpec: true satisfies Equals<api.DNSRecordSetSpec, DNSRecordSetSpec>,
  DNSRecordSetStatus: true satisfies Equals<api.DNSRecordSetStatus, DNSRecordSetStatus>,
  DomainSpec: true satisfies Equals<api.DomainSpec, DomainSpec>,
  DomainStatus: true satisfies Equals<api.DomainStatus, DomainStatus>,
  Kind: true satisfies Equals<api.Kind, 'DNSZoneClass' | 'DNSZone' | 'DNSRecordSet' | 'Domain'>,
  ResourceStatus: true satisfies Equals<
    NonNullable<api.Resource['status']>,
    DNSZoneClassStatus | DNSZoneStatus | DNSRecordSetStatus | DomainStatus
  >,
};

it('generated types equal the API contract (checked by tsc)', () => {
  assert.ok(Object.values(contract).every((v) => v));
});
