/**
 * Example manifests: valid ones of each kind, and invalid ones with the problem each must produce.
 * Used by the tests here and handy for other packages' tests. Every call returns fresh objects.
 */
import type { Problem } from '../../src/api/schema.ts';

type Json = Record<string, unknown>;

export function exampleZoneClass(): Json {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZoneClass',
    metadata: { name: 'builtin' },
    spec: {
      backend: { builtin: {} },
      nameServers: ['ns1.example.net.', 'ns2.example.net.'],
      defaults: {
        ttl: 300,
        soa: { rname: 'hostmaster@example.net', refresh: 3600, retry: 600, expire: 1209600, minimum: 300 },
      },
    },
  };
}

export function exampleZone(): Json {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name: 'example-com', namespace: 'dns' },
    spec: {
      domainName: 'example.com',
      className: 'builtin',
      ttl: 600,
      soa: { rname: 'hostmaster.example.com.' },
      delegations: [{ namespaces: ['team-a'], names: ['*.apps', 'api'], types: ['A', 'AAAA', 'CNAME'] }],
    },
  };
}

export function exampleRecordSet(): Json {
  return {
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSRecordSet',
    metadata: { name: 'www', namespace: 'dns' },
    spec: {
      zoneRef: { name: 'example-com' },
      name: 'www',
      type: 'A',
      ttl: 300,
      records: ['192.0.2.1', '192.0.2.2'],
    },
  };
}

export interface ExampleCase {
  name: string;
  object: Json;
  /** The previous version, for update (transition) rules. */
  old?: Json;
  /** Problems expected (path and code exact, message containing `message`); none means valid. */
  problems: (Omit<Problem, 'message'> & { message: string })[];
  /** The case is about metadata or apiVersion/kind, which the CRD schema does not cover. */
  metadataOnly?: boolean;
  /** The API server prunes the unknown field silently; folder mode rejects it. */
  pruned?: boolean;
}

function edit(base: Json, change: (o: Json) => void): Json {
  const o = structuredClone(base);
  change(o);
  return o;
}
const spec = (o: Json): Json => o.spec as Json;
const meta = (o: Json): Json => o.metadata as Json;

/** Valid variants beyond the three examples. */
export function validCases(): ExampleCase[] {
  return [
    { name: 'class example', object: exampleZoneClass(), problems: [] },
    { name: 'zone example', object: exampleZone(), problems: [] },
    { name: 'record set example', object: exampleRecordSet(), problems: [] },
    {
      name: 'powerdns class with every setting',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {
          powerdns: {
            url: 'https://pdns.example.net:8443/pdns',
            serverId: 'localhost',
            apiKeySecretRef: { namespace: 'dns-system', name: 'pdns-api', key: 'api-key' },
            zoneKind: 'Master',
            tls: {
              caFile: '/etc/zonekeeper/pdns-ca.pem',
              serverName: 'pdns.example.net',
              insecureSkipVerify: false,
            },
            resyncSeconds: 60,
            timeoutSeconds: 5,
          },
        };
      }),
      problems: [],
    },
    {
      name: 'powerdns class with an API key file',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {
          powerdns: { url: 'http://127.0.0.1:8081', apiKeySecretRef: { file: '/run/pdns-key' } },
        };
      }),
      problems: [],
    },
    {
      name: 'minimal class',
      object: edit(exampleZoneClass(), (o) => {
        delete spec(o).defaults;
        spec(o).nameServers = ['ns1.example.net.'];
      }),
      problems: [],
    },
    {
      name: 'zone with trailing dot, upper case, underscore label and no namespace',
      object: edit(exampleZone(), (o) => {
        delete meta(o).namespace;
        spec(o).domainName = '_ACME-challenge.Example.COM.';
        delete spec(o).delegations;
        delete spec(o).soa;
      }),
      problems: [],
    },
    {
      name: 'zone update keeping domainName',
      object: edit(exampleZone(), (o) => {
        spec(o).ttl = 60;
      }),
      old: exampleZone(),
      problems: [],
    },
    {
      name: 'zone with every delegation pattern',
      object: edit(exampleZone(), (o) => {
        spec(o).delegations = [
          { namespaces: ['a'], names: ['@', '*', 'api', '*.apps', 'a.b-c._tcp'] },
          { namespaces: ['b'], types: ['TXT'] },
          {},
        ];
      }),
      problems: [],
    },
    {
      name: 'rname forms',
      object: edit(exampleZone(), (o) => {
        spec(o).soa = { rname: 'first.last@example.com.', minimum: 60 };
      }),
      problems: [],
    },
    {
      name: 'rname with an escaped dot',
      object: edit(exampleZone(), (o) => {
        spec(o).soa = { rname: 'first\\.last.example.com.' };
      }),
      problems: [],
    },
    {
      name: 'CNAME with one record and no zoneRef',
      object: edit(exampleRecordSet(), (o) => {
        delete spec(o).zoneRef;
        spec(o).name = 'www.example.com.';
        spec(o).type = 'CNAME';
        spec(o).records = ['web.example.net.'];
      }),
      problems: [],
    },
    {
      name: 'null ttl counts as absent',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).ttl = null;
      }),
      problems: [],
    },
    {
      name: 'absolute record name and cross-namespace zoneRef',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).name = 'www.example.com.';
        spec(o).zoneRef = { name: 'example-com', namespace: 'dns' };
      }),
      problems: [],
    },
  ];
}

/** One case per rule: each must fail with exactly these problems. */
export function invalidCases(): ExampleCase[] {
  return [
    {
      name: 'class without backend',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {};
      }),
      problems: [
        {
          path: 'spec.backend',
          code: 'EXACTLY_ONE',
          message: 'exactly one backend must be set, found none; set spec.backend.builtin: {}',
        },
      ],
    },
    {
      name: 'class with an unknown backend',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = { webhook: { url: 'http://192.0.2.53:8080' } };
      }),
      pruned: true,
      problems: [
        {
          path: 'spec.backend.webhook',
          code: 'UNKNOWN_FIELD',
          message:
            'unknown field "webhook"; known fields: builtin, powerdns, homelabWebhook, rfc2136, externalDNSWebhook',
        },
      ],
    },
    {
      name: 'rfc2136 backend without a TSIG key',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = { rfc2136: { server: '192.0.2.53' } };
      }),
      problems: [
        {
          path: 'spec.backend.rfc2136.tsigKey',
          code: 'REQUIRED',
          message: 'required',
        },
      ],
    },
    {
      name: 'powerdns backend without an API key reference',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = { powerdns: { url: 'http://pdns:8081' } };
      }),
      problems: [
        {
          path: 'spec.backend.powerdns.apiKeySecretRef',
          code: 'REQUIRED',
          message: 'required field is missing',
        },
      ],
    },
    {
      name: 'powerdns API key from a file and an environment variable at once',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {
          powerdns: { url: 'http://pdns:8081', apiKeySecretRef: { file: '/run/pdns-key', env: 'PDNS_KEY' } },
        };
      }),
      problems: [
        {
          path: 'spec.backend.powerdns.apiKeySecretRef',
          code: 'EXACTLY_ONE',
          message: 'set exactly one of file, env, or name',
        },
      ],
    },
    {
      name: 'powerdns url that is not http(s)',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = { powerdns: { url: 'pdns:8081', apiKeySecretRef: { env: 'PDNS_KEY' } } };
      }),
      problems: [
        {
          path: 'spec.backend.powerdns.url',
          code: 'PATTERN',
          message: 'is not an http:// or https:// URL',
        },
      ],
    },
    {
      name: 'powerdns zone kind not Native or Master',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {
          powerdns: { url: 'http://pdns:8081', apiKeySecretRef: { env: 'PDNS_KEY' }, zoneKind: 'native' },
        };
      }),
      problems: [
        {
          path: 'spec.backend.powerdns.zoneKind',
          code: 'NOT_IN_ENUM',
          message: '"native" is not one of Native, Master; did you mean "Native"?',
        },
      ],
    },
    {
      name: 'two backends',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = {
          builtin: {},
          powerdns: { url: 'http://pdns:8081', apiKeySecretRef: { env: 'K' } },
        };
      }),
      problems: [
        {
          path: 'spec.backend',
          code: 'EXACTLY_ONE',
          message: 'exactly one backend must be set, found 2 (builtin, powerdns); keep one',
        },
      ],
    },
    {
      name: 'builtin backend with settings',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).backend = { builtin: { port: 53 } };
      }),
      pruned: true,
      problems: [
        { path: 'spec.backend.builtin.port', code: 'UNKNOWN_FIELD', message: 'known fields: none (use {})' },
      ],
    },
    {
      name: 'name server without the trailing dot',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).nameServers = ['ns1.example.net.', 'ns2.example.net'];
      }),
      problems: [
        {
          path: 'spec.nameServers[1]',
          code: 'NOT_ABSOLUTE',
          message: '"ns2.example.net" must be an absolute host name ending with a dot; add the trailing dot',
        },
      ],
    },
    {
      name: 'name server that is not a host name',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).nameServers = ['ns_1.example.net.'];
      }),
      problems: [{ path: 'spec.nameServers[0]', code: 'PATTERN', message: 'is not an absolute host name' }],
    },
    {
      name: 'no name servers',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).nameServers = [];
      }),
      problems: [
        { path: 'spec.nameServers', code: 'TOO_FEW_ITEMS', message: 'must have at least 1 item, got 0' },
      ],
    },
    {
      name: 'fourteen name servers',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).nameServers = Array.from({ length: 14 }, (_, i) => `ns${i}.example.net.`);
      }),
      problems: [
        { path: 'spec.nameServers', code: 'TOO_MANY_ITEMS', message: 'must have at most 13 items, got 14' },
      ],
    },
    {
      name: 'duplicate name servers',
      object: edit(exampleZoneClass(), (o) => {
        spec(o).nameServers = ['ns1.example.net.', 'ns1.example.net.'];
      }),
      problems: [
        {
          path: 'spec.nameServers[1]',
          code: 'DUPLICATE_ENTRY',
          message: 'is already at spec.nameServers[0]',
        },
      ],
    },
    {
      name: 'class default ttl 0',
      object: edit(exampleZoneClass(), (o) => {
        (spec(o).defaults as Json).ttl = 0;
      }),
      problems: [{ path: 'spec.defaults.ttl', code: 'TOO_SMALL', message: '0 is below the minimum 1' }],
    },
    {
      name: 'SOA timer above 2^31-1',
      object: edit(exampleZoneClass(), (o) => {
        ((spec(o).defaults as Json).soa as Json).expire = 2147483648;
      }),
      problems: [
        {
          path: 'spec.defaults.soa.expire',
          code: 'TOO_LARGE',
          message: '2147483648 is above the maximum 2147483647',
        },
      ],
    },
    {
      name: 'rname that is not a mailbox',
      object: edit(exampleZoneClass(), (o) => {
        ((spec(o).defaults as Json).soa as Json).rname = 'host master@example.net';
      }),
      problems: [{ path: 'spec.defaults.soa.rname', code: 'PATTERN', message: 'is not a mailbox' }],
    },
    {
      name: 'namespace on a cluster-scoped kind',
      object: edit(exampleZoneClass(), (o) => {
        meta(o).namespace = 'default';
      }),
      metadataOnly: true,
      problems: [
        {
          path: 'metadata.namespace',
          code: 'CLUSTER_SCOPED',
          message: 'DNSZoneClass is cluster-scoped and has no namespace; remove metadata.namespace',
        },
      ],
    },
    {
      name: 'zone with a single-label domain',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = 'com';
      }),
      problems: [{ path: 'spec.domainName', code: 'PATTERN', message: 'at least two labels' }],
    },
    {
      name: 'zone with an empty label',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = 'z3..example';
      }),
      problems: [
        {
          path: 'spec.domainName',
          code: 'PATTERN',
          message: '"z3..example" has an empty label (a leading or doubled "."); remove the extra dot',
        },
      ],
    },
    {
      name: 'zone with a leading dot',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = '.example.com';
      }),
      problems: [{ path: 'spec.domainName', code: 'PATTERN', message: 'has an empty label' }],
    },
    {
      name: 'zone with a character a domain name cannot have',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = 'ex!ample.com';
      }),
      problems: [
        {
          path: 'spec.domainName',
          code: 'PATTERN',
          message: 'label "ex!ample" contains "!"; labels are letters, digits, "-" and "_"',
        },
      ],
    },
    {
      name: 'zone with a label ending in a hyphen',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = 'example-.com';
      }),
      problems: [{ path: 'spec.domainName', code: 'PATTERN', message: 'label "example-" ends with "-"' }],
    },
    {
      name: 'zone with a label over 63 characters',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = `${'a'.repeat(64)}.com`;
      }),
      problems: [{ path: 'spec.domainName', code: 'PATTERN', message: 'has a label of 64 characters' }],
    },
    {
      name: 'zone domainName changed',
      object: edit(exampleZone(), (o) => {
        spec(o).domainName = 'example.org';
      }),
      old: exampleZone(),
      problems: [
        {
          path: 'spec.domainName',
          code: 'IMMUTABLE',
          message:
            'domainName is immutable (was "example.com", now "example.org"); create a new DNSZone instead',
        },
      ],
    },
    {
      name: 'zone without className',
      object: edit(exampleZone(), (o) => {
        delete spec(o).className;
      }),
      problems: [{ path: 'spec.className', code: 'REQUIRED', message: 'required field is missing' }],
    },
    {
      name: 'zone className with upper case',
      object: edit(exampleZone(), (o) => {
        spec(o).className = 'Builtin';
      }),
      problems: [{ path: 'spec.className', code: 'PATTERN', message: 'try "builtin"' }],
    },
    {
      name: 'zone with 65 delegations',
      object: edit(exampleZone(), (o) => {
        spec(o).delegations = Array.from({ length: 65 }, (_, i) => ({ namespaces: [`team-${i}`] }));
      }),
      problems: [
        { path: 'spec.delegations', code: 'TOO_MANY_ITEMS', message: 'must have at most 64 items, got 65' },
      ],
    },
    {
      name: 'delegation to an invalid namespace',
      object: edit(exampleZone(), (o) => {
        spec(o).delegations = [{ namespaces: ['Team_A'] }];
      }),
      problems: [
        {
          path: 'spec.delegations[0].namespaces[0]',
          code: 'PATTERN',
          message: 'is not a valid namespace name',
        },
      ],
    },
    {
      name: 'delegation name that is absolute',
      object: edit(exampleZone(), (o) => {
        spec(o).delegations = [{ namespaces: ['a'], names: ['api.example.com.'] }];
      }),
      problems: [
        { path: 'spec.delegations[0].names[0]', code: 'PATTERN', message: 'is not a relative name pattern' },
      ],
    },
    {
      name: 'delegation type not a record type',
      object: edit(exampleZone(), (o) => {
        spec(o).delegations = [{ namespaces: ['a'], types: ['a'] }];
      }),
      problems: [{ path: 'spec.delegations[0].types[0]', code: 'NOT_IN_ENUM', message: 'did you mean "A"?' }],
    },
    {
      name: 'CNAME with two records',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).type = 'CNAME';
        spec(o).records = ['a.example.net.', 'b.example.net.'];
      }),
      problems: [
        {
          path: 'spec.records',
          code: 'SINGLE_RECORD',
          message: 'a CNAME record set has exactly one record, found 2; keep one',
        },
      ],
    },
    {
      name: 'ALIAS with two records',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).type = 'ALIAS';
        spec(o).records = ['a.example.net.', 'b.example.net.'];
      }),
      problems: [
        {
          path: 'spec.records',
          code: 'SINGLE_RECORD',
          message: 'an ALIAS record set has exactly one record',
        },
      ],
    },
    {
      name: 'SOA record set',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).type = 'SOA';
        spec(o).records = ['ns1.example.net. hostmaster.example.com. 1 3600 600 1209600 300'];
      }),
      problems: [
        {
          path: 'spec.type',
          code: 'SOA_FORBIDDEN',
          message: 'the SOA is generated from the DNSZone and its class; set spec.soa on the DNSZone',
        },
      ],
    },
    {
      name: 'NS record set at a wildcard name',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).name = '*.apps';
        spec(o).type = 'NS';
        spec(o).records = ['ns1.example.net.'];
      }),
      problems: [
        {
          path: 'spec.name',
          code: 'WILDCARD_NS',
          message:
            'an NS record set cannot have a wildcard owner name ("*.apps"): a wildcard does not delegate (RFC 4592 §4.2); publish NS records at each name to delegate',
        },
      ],
    },
    {
      name: 'NS record set at the wildcard of an absolute name',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).name = '*.example.com.';
        spec(o).type = 'NS';
        spec(o).records = ['ns1.example.net.'];
      }),
      problems: [{ path: 'spec.name', code: 'WILDCARD_NS', message: 'RFC 4592 §4.2' }],
    },
    {
      name: 'unknown record type',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).type = 'MXX';
      }),
      problems: [{ path: 'spec.type', code: 'NOT_IN_ENUM', message: '"MXX" is not one of A, AAAA, CNAME' }],
    },
    {
      name: 'typo spec.recrods',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).recrods = spec(o).records;
        delete spec(o).records;
      }),
      pruned: true,
      problems: [
        {
          path: 'spec.recrods',
          code: 'UNKNOWN_FIELD',
          message:
            'unknown field "recrods"; known fields: zoneRef, name, type, ttl, records, healthCheck, selection, placement; did you mean "records"?',
        },
        { path: 'spec.records', code: 'REQUIRED', message: 'required field is missing' },
      ],
    },
    {
      name: 'no records',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).records = [];
      }),
      problems: [
        { path: 'spec.records', code: 'TOO_FEW_ITEMS', message: 'must have at least 1 item, got 0' },
      ],
    },
    {
      name: 'empty record',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).records = ['192.0.2.1', ''];
      }),
      problems: [{ path: 'spec.records[1]', code: 'TOO_SHORT', message: 'must not be empty' }],
    },
    {
      name: 'ttl as a string',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).ttl = '300';
      }),
      problems: [
        {
          path: 'spec.ttl',
          code: 'INVALID_TYPE',
          message: 'must be an integer, got a string ("300"); remove the quotes',
        },
      ],
    },
    {
      name: 'ttl above 2^31-1',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).ttl = 2147483648;
      }),
      problems: [{ path: 'spec.ttl', code: 'TOO_LARGE', message: 'is above the maximum 2147483647' }],
    },
    {
      name: 'zoneRef without name',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).zoneRef = { namespace: 'dns' };
      }),
      problems: [{ path: 'spec.zoneRef.name', code: 'REQUIRED', message: 'required field is missing' }],
    },
    {
      name: 'record name too long',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).name = 'a'.repeat(256);
      }),
      problems: [
        { path: 'spec.name', code: 'TOO_LONG', message: 'is 256 characters long, the maximum is 255' },
      ],
    },
    {
      name: 'records not a list',
      object: edit(exampleRecordSet(), (o) => {
        spec(o).records = '192.0.2.1';
      }),
      problems: [
        { path: 'spec.records', code: 'INVALID_TYPE', message: 'must be a list, got a string ("192.0.2.1")' },
      ],
    },
    {
      name: 'wrong apiVersion',
      object: edit(exampleRecordSet(), (o) => {
        o.apiVersion = 'dns.zonekeeper.dev/v1';
      }),
      metadataOnly: true,
      problems: [
        {
          path: 'apiVersion',
          code: 'API_VERSION',
          message: 'must be dns.zonekeeper.dev/v1alpha1, got "dns.zonekeeper.dev/v1"',
        },
      ],
    },
    {
      name: 'unknown kind',
      object: edit(exampleRecordSet(), (o) => {
        o.kind = 'DNSRecord';
      }),
      metadataOnly: true,
      problems: [
        {
          path: 'kind',
          code: 'KIND',
          message: '"DNSRecord" is not one of DNSZoneClass, DNSZone, DNSRecordSet',
        },
      ],
    },
    {
      name: 'invalid object name',
      object: edit(exampleRecordSet(), (o) => {
        meta(o).name = 'WWW_1';
      }),
      metadataOnly: true,
      problems: [{ path: 'metadata.name', code: 'PATTERN', message: 'is not a valid name' }],
    },
    {
      name: 'object name with capitals and an underscore: the suggestion is itself valid',
      object: edit(exampleZone(), (o) => {
        meta(o).name = 'Upper_Case';
      }),
      metadataOnly: true,
      problems: [{ path: 'metadata.name', code: 'PATTERN', message: 'try "upper-case"' }],
    },
    {
      name: 'namespace with an underscore: the suggestion is itself valid',
      object: edit(exampleZone(), (o) => {
        meta(o).namespace = 'Team_A.';
      }),
      metadataOnly: true,
      problems: [{ path: 'metadata.namespace', code: 'PATTERN', message: 'try "team-a"' }],
    },
    {
      name: 'typo in metadata',
      object: edit(exampleRecordSet(), (o) => {
        meta(o).lables = { app: 'web' };
      }),
      metadataOnly: true,
      problems: [{ path: 'metadata.lables', code: 'UNKNOWN_FIELD', message: 'did you mean "labels"?' }],
    },
    {
      name: 'typo at the top level',
      object: edit(exampleRecordSet(), (o) => {
        o.specs = {};
      }),
      metadataOnly: true,
      problems: [{ path: 'specs', code: 'UNKNOWN_FIELD', message: 'did you mean "spec"?' }],
    },
  ];
}
