/**
 * The zones of the Knot differential suite (test/differential-knot.test.ts), as manifests: every
 * rule of the answer algorithm in five zones. Also answered in process from zone images and from
 * ZoneSnapshots by src/server/image/image-zone.test.ts.
 */

const API = 'dns.zonekeeper.dev/v1alpha1';
const HEX64 = 'd4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a';
const long = (c: string, n = 255) => c.repeat(n);

type RecordSpec = [name: string, type: string, records: string[], ttl?: number];

/** example.com: the main zone, exercising every rule of the answer algorithm. */
const EXAMPLE_COM: RecordSpec[] = [
  // Apex data of many types; ALIAS is left out (Knot does not know it).
  ['@', 'A', ['192.0.2.1']],
  ['@', 'AAAA', ['2001:db8::1']],
  ['@', 'MX', ['10 mail', '20 mx.example.net.', '30 mail.deleg']],
  ['@', 'TXT', ['"v=spf1 mx -all"', '"two" "strings"']],
  ['@', 'CAA', ['0 issue "letsencrypt.org"']],
  ['@', 'HTTPS', ['1 . alpn="h3,h2"']],
  ['ns1', 'A', ['192.0.2.53']],
  ['ns1', 'AAAA', ['2001:db8::53']],
  ['ns2', 'A', ['198.51.100.53']],
  ['mail', 'A', ['192.0.2.25']],
  ['mail', 'AAAA', ['2001:db8::25']],
  ['www', 'A', ['192.0.2.10', '192.0.2.11']],
  ['www', 'AAAA', ['2001:db8::10']],
  ['www', 'TXT', ['"hello world"'], 60],
  ['www', 'SSHFP', [`4 2 ${HEX64}`]],
  ['_443._tcp.www', 'TLSA', [`3 1 1 ${HEX64}`]],
  ['_sip._tcp', 'SRV', ['10 60 5060 sip', '20 0 5061 sip2.example.net.']],
  ['sip', 'A', ['192.0.2.60']],
  ['sip', 'NAPTR', ['100 10 "S" "SIP+D2T" "" _sip._tcp.example.com.']],
  ['_dns', 'SVCB', ['1 www alpn="h2" port=8443']],
  ['ptr', 'PTR', ['www.example.com.']],
  // Wildcards (RFC 4592): data of several types, an existing name beside it, an ENT below it.
  ['*.wild', 'A', ['192.0.2.100']],
  ['*.wild', 'TXT', ['"wildcard"']],
  ['*.wild', 'MX', ['10 mail']],
  ['host.wild', 'A', ['192.0.2.101']],
  ['a.b.wild', 'TXT', ['"below an empty non-terminal"']],
  // A wildcard below a name that has data of its own.
  ['svc', 'TXT', ['"svc exists"']],
  ['*.svc', 'A', ['192.0.2.110']],
  // Wildcard CNAMEs: to data, to nothing, to itself.
  ['*.cn', 'CNAME', ['www']],
  ['*.cnx', 'CNAME', ['nothere']],
  ['*.cnloop', 'CNAME', ['x.cnloop']],
  // A wildcard whose source of synthesis is an empty non-terminal (RFC 4592 §4.9: "*.odd" only has descendants).
  ['sub.*.odd', 'TXT', ['"below a wildcard ENT"']],
  // Empty non-terminals.
  ['a.b.c.ent', 'TXT', ['"deep"']],
  // A delegation to external name servers, with in-bailiwick glue and a DS.
  ['deleg', 'NS', ['ns1.deleg', 'ns2.deleg', 'ns.outside.test.']],
  ['ns1.deleg', 'A', ['192.0.2.201']],
  ['ns2.deleg', 'AAAA', ['2001:db8::202']],
  ['deleg', 'DS', [`60485 13 2 ${HEX64}`]],
  // A delegation whose required glue does not fit in 512 octets (RFC 9471: TC, not a partial referral).
  ['bigdeleg', 'NS', Array.from({ length: 8 }, (_, i) => `ns${i}.bigdeleg`)],
  ...Array.from({ length: 8 }, (_, i): RecordSpec => [`ns${i}.bigdeleg`, 'A', [`192.0.2.${210 + i}`]]),
  ...Array.from({ length: 8 }, (_, i): RecordSpec => [`ns${i}.bigdeleg`, 'AAAA', [`2001:db8::2:${i}`]]),
  // A delegation without DS whose second name server is elsewhere in this zone.
  ['nods', 'NS', ['ns.outside.test.', 'ns1.example.com.']],
  // DS for the managed child zone, on the parent side.
  ['child', 'DS', [`12345 8 2 ${HEX64}`]],
  // CNAME chains inside the zone, across zones, into a delegation, out of the zones, loops.
  ['c1', 'CNAME', ['c2']],
  ['c2', 'CNAME', ['c3']],
  ['c3', 'CNAME', ['www']],
  ...[1, 2, 3, 4, 5, 6, 7].map((i): RecordSpec => ['l' + i, 'CNAME', [i < 7 ? `l${i + 1}` : 'www']]),
  ['tonet', 'CNAME', ['www.example.net.']],
  ['tochild', 'CNAME', ['www.child.example.com.']],
  ['todeleg', 'CNAME', ['host.deleg']],
  ['toout', 'CNAME', ['www.outside.test.']],
  ['dangling', 'CNAME', ['missing']],
  ['loop1', 'CNAME', ['loop2']],
  ['loop2', 'CNAME', ['loop1']],
  ['self', 'CNAME', ['self']],
  ['towild', 'CNAME', ['foo.wild']],
  ['tomx', 'CNAME', ['@']],
  // Responses too large for 512 octets, for 1232, and additional data that does not all fit in 512.
  ['big', 'TXT', [`"${long('a')}" "${long('b')}" "${long('c')}"`]],
  ['huge', 'TXT', [[1, 2, 3, 4, 5, 6].map((i) => `"${long(String(i))}"`).join(' ')]],
  ['many', 'A', Array.from({ length: 40 }, (_, i) => `198.51.100.${i + 1}`)],
  ['mxmany', 'MX', Array.from({ length: 12 }, (_, i) => `${i} t${i}.mxmany`)],
  ...Array.from({ length: 12 }, (_, i): RecordSpec => [`t${i}.mxmany`, 'A', [`203.0.113.${i + 100}`]]),
  ...Array.from({ length: 12 }, (_, i): RecordSpec => [`t${i}.mxmany`, 'AAAA', [`2001:db8::1:${i}`]]),
  // Names with unusual characters and case.
  ['_dmarc', 'TXT', ['"v=DMARC1; p=none"']],
  ['under_score', 'A', ['192.0.2.120']],
  ['with\\.dot', 'A', ['192.0.2.121']],
  ['sp\\032ace', 'A', ['192.0.2.122']],
  ['MiXeD', 'TXT', ['"mixed case owner"']],
  ['quote\\"d', 'TXT', ['"a \\"quoted\\" string; with \\\\ escapes"']],
];

/** The managed child zone child.example.com, whose first name server is inside it (glue in the parent). */
const CHILD: RecordSpec[] = [
  ['@', 'TXT', ['"child apex"']],
  ['ns1', 'A', ['192.0.2.150']],
  ['www', 'A', ['192.0.2.151']],
  ['*.wild', 'TXT', ['"child wildcard"']],
];

/** example.net: targets of cross-zone CNAMEs, MX and SRV, and a CNAME back into example.com. */
const EXAMPLE_NET: RecordSpec[] = [
  ['@', 'MX', ['10 mx']],
  ['www', 'A', ['203.0.113.10']],
  ['mx', 'A', ['203.0.113.25']],
  ['ns', 'A', ['203.0.113.53']],
  ['sip2', 'A', ['203.0.113.60']],
  ['alias', 'CNAME', ['www.example.com.']],
];

/** example.org: a wildcard at the apex, so missing names are synthesized at any depth. */
const EXAMPLE_ORG: RecordSpec[] = [
  ['*', 'A', ['203.0.113.80']],
  ['*', 'TXT', ['"org wildcard"']],
  ['host', 'A', ['203.0.113.81']],
];

/** 2.0.192.in-addr.arpa: reverse zone. */
const REVERSE: RecordSpec[] = [['10', 'PTR', ['www.example.com.']]];

export function manifests(): unknown[] {
  const docs: unknown[] = [
    {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'main' },
      spec: {
        backend: { builtin: {} },
        nameServers: ['ns1.example.com.', 'ns2.example.com.'],
        defaults: { ttl: 300, soa: { rname: 'hostmaster@example.com', minimum: 60 } },
      },
    },
    {
      apiVersion: API,
      kind: 'DNSZoneClass',
      metadata: { name: 'child' },
      spec: {
        backend: { builtin: {} },
        nameServers: ['ns1.child.example.com.', 'ns.example.net.'],
        defaults: { ttl: 600 },
      },
    },
  ];
  const zone = (
    name: string,
    domainName: string,
    className: string,
    extra: object,
    records: RecordSpec[],
  ) => {
    docs.push({
      apiVersion: API,
      kind: 'DNSZone',
      metadata: { name, namespace: 'dns' },
      spec: { domainName, className, ...extra },
    });
    records.forEach(([rname, type, values, ttl], i) => {
      docs.push({
        apiVersion: API,
        kind: 'DNSRecordSet',
        metadata: { name: `${name}-${i}`, namespace: 'dns' },
        spec: { zoneRef: { name }, name: rname, type, records: values, ...(ttl ? { ttl } : {}) },
      });
    });
  };
  zone('example-com', 'example.com', 'main', {}, EXAMPLE_COM);
  zone('child', 'child.example.com', 'child', {}, CHILD);
  // RFC 2308 §5 both ways: here the SOA TTL (120) is below MINIMUM (3600).
  zone('example-net', 'example.net', 'main', { ttl: 120, soa: { minimum: 3600 } }, EXAMPLE_NET);
  zone('example-org', 'example.org', 'main', {}, EXAMPLE_ORG);
  zone('reverse', '2.0.192.in-addr.arpa', 'main', {}, REVERSE);
  return docs;
}
