/**
 * YAML manifests of the built-in backend's resources (DNSZoneClass, DNSZone, DNSRecordSet) for the
 * `zonekeeper serve` suites: each returns one document, to be joined with `---`.
 */

const API_VERSION = 'apiVersion: dns.zonekeeper.dev/v1alpha1';

/** The `builtin` DNSZoneClass; `extra` is appended verbatim under `spec` (e.g. a `transfers` block). */
export function builtinClass({
  nameServers,
  ttl,
  rname,
  extra = '',
}: {
  nameServers: string;
  ttl: number;
  rname: string;
  extra?: string;
}): string {
  return `${API_VERSION}
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [${nameServers}]
  defaults:
    ttl: ${ttl}
    soa: { rname: ${rname} }${extra}`;
}

/**
 * A DNSZone in namespace `dns` of class `builtin`; each entry of `spec` is one more line under `spec`
 * (indented by two spaces). `blockMetadata` writes the metadata as a block instead of a flow map,
 * holding `annotations` when given.
 */
export function dnsZone({
  name,
  domainName,
  spec,
  blockMetadata = false,
  annotations,
}: {
  name: string;
  domainName: string;
  spec: readonly string[];
  blockMetadata?: boolean;
  annotations?: string;
}): string {
  const metadata = blockMetadata
    ? `metadata:\n  name: ${name}\n  namespace: dns${annotations === undefined ? '' : `\n  annotations: ${annotations}`}`
    : `metadata: { name: ${name}, namespace: dns }`;
  return `${API_VERSION}
kind: DNSZone
${metadata}
spec:
  domainName: ${domainName}
  className: builtin${spec.map((line) => `\n  ${line}`).join('')}`;
}

/**
 * A DNSRecordSet `<zone>-<name>` in namespace `dns`; `owner` is written as given (quote it in the
 * caller where YAML needs it), `ttl` only when set.
 */
export function recordSet({
  zone,
  name,
  owner,
  type,
  records,
  ttl,
}: {
  zone: string;
  name: string;
  owner: string;
  type: string;
  records: readonly string[];
  ttl?: number;
}): string {
  return `${API_VERSION}
kind: DNSRecordSet
metadata: { name: ${zone}-${name}, namespace: dns }
spec:
  zoneRef: { name: ${zone} }
  name: ${owner}
  type: ${type}${ttl === undefined ? '' : `\n  ttl: ${ttl}`}
  records: ${JSON.stringify(records)}`;
}
