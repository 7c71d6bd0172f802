import type {
  DNSRecordSet,
  DNSRecordSetSpec,
  DNSZone,
  DNSZoneClass,
  DNSZoneSpec,
} from '../../src/api/index.ts';
import { API_VERSION } from '../../src/api/index.ts';

/** Builders for resources in tests; `age` orders objects (a smaller age is older). */
export function zoneClass(
  name = 'builtin',
  nameServers = ['ns1.example.com.', 'ns2.example.com.'],
  extra: Partial<DNSZoneClass['spec']> = {},
): DNSZoneClass {
  return {
    apiVersion: API_VERSION,
    kind: 'DNSZoneClass',
    metadata: { name, generation: 1, creationTimestamp: stamp(0) },
    spec: { backend: { builtin: {} }, nameServers, ...extra },
  };
}

export function zone(
  namespace: string,
  name: string,
  domainName: string,
  spec: Partial<DNSZoneSpec> = {},
  age = 0,
): DNSZone {
  return {
    apiVersion: API_VERSION,
    kind: 'DNSZone',
    metadata: { name, namespace, generation: 1, creationTimestamp: stamp(age) },
    spec: { domainName, className: 'builtin', ...spec },
  };
}

export function recordSet(namespace: string, name: string, spec: DNSRecordSetSpec, age = 0): DNSRecordSet {
  return {
    apiVersion: API_VERSION,
    kind: 'DNSRecordSet',
    metadata: { name, namespace, generation: 1, creationTimestamp: stamp(age) },
    spec,
  };
}

export function stamp(age: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, age)).toISOString();
}
