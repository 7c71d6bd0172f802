import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONFIRM_CHANGE_ANNOTATION } from '../../api/change-safety.ts';
import {
  adoptRecord,
  placeZone,
  type RecordObject,
  type ZoneObject,
} from '../../api/frontdoors/kubizone/adoption.ts';
import { claimData, claimFromData, ownerOf, withClaimant, withoutClaimant } from './claims.ts';
import {
  CLUSTER_LABEL,
  clusterNameProblem,
  DATUM_ZONE,
  DNSENDPOINT,
  GARDENER_RECORD,
  GENERATION_ANNOTATION,
  HOMELAB_RECORD,
  isMirroredKind,
  KUBIZONE_RECORD,
  KUBIZONE_ZONE,
  kubizoneZoneFqdn,
  MIRRORED_KIND_INFO,
  MIRRORED_KINDS,
  mirrorable,
  mirrorClassName,
  mirrorNamespace,
  mirrorOf,
  mirrorUpToDate,
  NAMESPACE_LABEL,
  type NamespaceOrigins,
  namespaceLabels,
  originOf,
  refusedStatus,
  UID_LABEL,
  type UpstreamObject,
  upstreamStatus,
  upstreamText,
} from './mapping.ts';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('multicluster mapping: namespaces', () => {
  test('stable, a DNS-1123 label of at most 63 characters, readable prefix', () => {
    const ns = mirrorNamespace('team-a', 'web');
    assert.equal(ns, mirrorNamespace('team-a', 'web'));
    assert.match(ns, /^team-a--web-[a-z2-7]{12}$/);
    const long = mirrorNamespace('c'.repeat(63), 'n'.repeat(63));
    assert.equal(long.length, 63);
    assert.match(long, LABEL);
    // A readable part cut right after a "-" does not leave "--" before the hash.
    const cut = mirrorNamespace('a'.repeat(47), 'x-y');
    assert.match(cut, LABEL);
    assert.doesNotMatch(cut, /--[a-z2-7]{12}$/);
  });

  test('pairs that read alike are distinct: separator games and truncation', () => {
    assert.notEqual(mirrorNamespace('a-b', 'c'), mirrorNamespace('a', 'b-c'));
    assert.notEqual(mirrorNamespace('a', 'b--c'), mirrorNamespace('a--b', 'c'));
    // Equal in the first 50 characters: the readable parts are the same, the names are not.
    const x = mirrorNamespace('cluster', `${'n'.repeat(60)}1`);
    const y = mirrorNamespace('cluster', `${'n'.repeat(60)}2`);
    assert.equal(x.slice(0, 50), y.slice(0, 50));
    assert.notEqual(x, y);
    // An upstream namespace named like another cluster's mirrored namespace maps somewhere else.
    const other = mirrorNamespace('b', 'team');
    assert.notEqual(mirrorNamespace('a', other), other);
  });

  test('the origin of a namespace needs labels that map to its name (forged labels prove nothing)', () => {
    const ns = mirrorNamespace('a', 'team');
    assert.deepEqual(originOf(ns, namespaceLabels({ cluster: 'a', namespace: 'team' })), {
      cluster: 'a',
      namespace: 'team',
    });
    assert.equal(originOf(ns, namespaceLabels({ cluster: 'b', namespace: 'team' })), undefined);
    assert.equal(originOf(ns, {}), undefined);
  });

  test('cluster names must be DNS-1123 labels', () => {
    assert.equal(clusterNameProblem('team-a'), undefined);
    assert.ok(clusterNameProblem('Team_A'));
    assert.ok(clusterNameProblem(''));
    assert.ok(clusterNameProblem('x'.repeat(64)));
    assert.ok(clusterNameProblem('a.b'));
  });
});

describe('multicluster mapping: objects', () => {
  const ctx = { cluster: 'a', namespaces: ['team', 'shoot--one', 'shoot--two', 'other'] };

  test('the spec is copied, status is not; origin labels replace whatever the upstream carries', () => {
    const { object, problems } = mirrorOf(
      'DNSRecordSet',
      {
        metadata: {
          name: 'www',
          namespace: 'team',
          uid: 'u-1',
          generation: 3,
          labels: { [CLUSTER_LABEL]: 'b', [NAMESPACE_LABEL]: 'victim', [UID_LABEL]: 'forged', app: 'x' },
          annotations: { [CONFIRM_CHANGE_ANNOTATION]: 'abc', other: 'y', [GENERATION_ANNOTATION]: '99' },
        },
        spec: { name: 'www', type: 'A', records: ['192.0.2.1'], zoneRef: { name: 'z', namespace: 'infra' } },
        status: { conditions: [] },
      },
      ctx,
    );
    assert.deepEqual(problems, []);
    assert.equal(object.metadata.namespace, mirrorNamespace('a', 'team'));
    assert.equal(object.metadata.labels[CLUSTER_LABEL], 'a');
    assert.equal(object.metadata.labels[NAMESPACE_LABEL], 'team');
    assert.equal(object.metadata.labels[UID_LABEL], 'u-1');
    assert.equal(object.metadata.labels.app, undefined);
    assert.equal(object.metadata.annotations[CONFIRM_CHANGE_ANNOTATION], 'abc');
    assert.equal(object.metadata.annotations.other, undefined);
    assert.equal(object.metadata.annotations[GENERATION_ANNOTATION], '3');
    assert.deepEqual(object.spec.zoneRef, { name: 'z', namespace: mirrorNamespace('a', 'infra') });
    assert.equal((object as { status?: unknown }).status, undefined);
  });

  test('delegations name namespaces of the same cluster; patterns expand to the known ones', () => {
    const { object } = mirrorOf(
      'DNSZone',
      {
        metadata: { name: 'z', namespace: 'team', generation: 1 },
        spec: {
          domainName: 'example.com',
          className: 'builtin',
          delegations: [
            { namespaces: ['other'], namespacePatterns: ['shoot--*'], types: ['A'] },
            { namespacePatterns: ['nothing-*'] },
          ],
        },
      },
      ctx,
    );
    assert.deepEqual(object.spec.delegations, [
      {
        types: ['A'],
        namespaces: ['other', 'shoot--one', 'shoot--two'].map((n) => mirrorNamespace('a', n)),
      },
      { namespaces: [] },
    ]);
  });

  test('more than 64 namespaces split into entries; more than 64 entries are cut and reported', () => {
    const many = Array.from({ length: 64 * 65 }, (_, i) => `p-${i}`);
    const { object, problems } = mirrorOf(
      'DNSZone',
      {
        metadata: { name: 'z', namespace: 'team' },
        spec: { domainName: 'example.com', className: 'c', delegations: [{ namespacePatterns: ['p-*'] }] },
      },
      { cluster: 'a', namespaces: many },
    );
    const delegations = object.spec.delegations as { namespaces: string[] }[];
    assert.equal(delegations.length, 64);
    assert.ok(delegations.every((d) => d.namespaces.length === 64));
    assert.equal(problems.length, 1);
  });

  test('up to date compares the spec and our metadata only', () => {
    const { object } = mirrorOf(
      'DNSZone',
      {
        metadata: { name: 'z', namespace: 'team', generation: 2 },
        spec: { domainName: 'a.example', className: 'c' },
      },
      ctx,
    );
    const actual = {
      metadata: {
        labels: { ...object.metadata.labels, extra: '1' },
        annotations: { ...object.metadata.annotations },
      },
      spec: { className: 'c', domainName: 'a.example' },
    };
    assert.ok(mirrorUpToDate(object, actual));
    assert.ok(!mirrorUpToDate(object, { ...actual, spec: { className: 'd', domainName: 'a.example' } }));
    assert.ok(
      !mirrorUpToDate(object, {
        ...actual,
        metadata: {
          ...actual.metadata,
          annotations: { ...actual.metadata.annotations, [GENERATION_ANNOTATION]: '1' },
        },
      }),
    );
  });
});

describe('multicluster mapping: Domains', () => {
  test("the spec is copied as written into the cluster's mirrored namespace; upstream labels are not", () => {
    const upstream = {
      metadata: {
        name: 'example-com',
        namespace: 'team',
        uid: 'u-1',
        generation: 4,
        labels: { [CLUSTER_LABEL]: 'b', [NAMESPACE_LABEL]: 'secret-team', x: 'y' },
        annotations: { 'dns.zonekeeper.dev/other': 'z' },
      },
      spec: { domainName: 'Example.COM.', className: 'public' },
      status: { conditions: [{ type: 'Verified', status: 'True' }] },
    };
    const { object, problems } = mirrorOf('Domain', upstream, { cluster: 'a', namespaces: ['team'] });
    assert.deepEqual(problems, []);
    assert.equal(object.kind, 'Domain');
    assert.equal(object.metadata.namespace, mirrorNamespace('a', 'team'));
    assert.notEqual(object.metadata.namespace, mirrorNamespace('b', 'team'));
    assert.deepEqual(object.spec, { domainName: 'Example.COM.', className: 'public' });
    assert.equal(object.metadata.labels[CLUSTER_LABEL], 'a');
    assert.equal(object.metadata.labels[NAMESPACE_LABEL], 'team');
    assert.equal(object.metadata.labels[UID_LABEL], 'u-1');
    assert.equal(object.metadata.labels.x, undefined);
    assert.equal(object.metadata.annotations[GENERATION_ANNOTATION], '4');
    assert.equal(object.metadata.annotations['dns.zonekeeper.dev/other'], undefined);
    assert.equal((object as { status?: unknown }).status, undefined, 'status is never copied down');
    assert.deepEqual(originOf(object.metadata.namespace, object.metadata.labels), {
      cluster: 'a',
      namespace: 'team',
    });
    assert.ok(mirrorUpToDate(object, { metadata: object.metadata, spec: { ...object.spec } }));
    assert.ok(
      !mirrorUpToDate(object, {
        metadata: object.metadata,
        spec: { domainName: 'other.com', className: 'public' },
      }),
    );
  });

  test('Domain is a mirrored kind', () => {
    assert.ok(isMirroredKind('Domain'));
    assert.ok(MIRRORED_KINDS.includes('Domain'));
    assert.ok(!isMirroredKind('DNSZoneClass'));
  });
});

describe('multicluster mapping: status back upstream', () => {
  const mine = mirrorNamespace('a', 'team');
  const theirs = mirrorNamespace('b', 'secret-team');
  const origins: NamespaceOrigins = (ns) =>
    ns === mine
      ? { cluster: 'a', namespace: 'team' }
      : ns === theirs
        ? { cluster: 'b', namespace: 'secret-team' }
        : undefined;

  test('observed generations become the upstream generation; namespaces map back; others are hidden', () => {
    const status = upstreamStatus(
      'DNSRecordSet',
      {
        metadata: { generation: 7, annotations: { [GENERATION_ANNOTATION]: '2' } },
        status: {
          observedGeneration: 7,
          fqdn: 'www.example.com.',
          zone: { namespace: mine, name: 'z' },
          conditions: [
            {
              type: 'Accepted',
              status: 'False',
              reason: 'Conflict',
              message: `www.example.com. A is owned by ${theirs}/rs-1 and ${mine}/rs-2`,
              lastTransitionTime: '2026-01-01T00:00:00Z',
              observedGeneration: 7,
            },
          ],
        },
      },
      'a',
      origins,
    );
    assert.deepEqual(status, {
      observedGeneration: 2,
      fqdn: 'www.example.com.',
      zone: { namespace: 'team', name: 'z' },
      conditions: [
        {
          type: 'Accepted',
          status: 'False',
          reason: 'Conflict',
          message: "www.example.com. A is owned by another cluster's object and team/rs-2",
          lastTransitionTime: '2026-01-01T00:00:00Z',
          observedGeneration: 2,
        },
      ],
    });
    assert.doesNotMatch(JSON.stringify(status), /secret-team|b--/);
  });

  test('a zone of another cluster is not named as parent; a stale status is not copied', () => {
    const zone = upstreamStatus(
      'DNSZone',
      {
        metadata: { generation: 1, annotations: { [GENERATION_ANNOTATION]: '1' } },
        status: { observedGeneration: 1, serial: 5, parentZone: { namespace: theirs, name: 'p' } },
      },
      'a',
      origins,
    );
    assert.deepEqual(zone, { observedGeneration: 1, serial: 5 });
    assert.equal(
      upstreamStatus(
        'DNSZone',
        {
          metadata: { generation: 2, annotations: { [GENERATION_ANNOTATION]: '2' } },
          status: { observedGeneration: 1 },
        },
        'a',
        origins,
      ),
      undefined,
    );
  });

  test('a Domain: conditions, token and apex come back; a claim held in another cluster is not named', () => {
    const status = upstreamStatus(
      'Domain',
      {
        metadata: { generation: 3, annotations: { [GENERATION_ANNOTATION]: '1' } },
        status: {
          observedGeneration: 3,
          apex: 'example.com',
          verification: {
            dnsRecord: { name: '_zonekeeper-challenge.example.com', type: 'TXT', content: 'tok-1' },
          },
          conditions: [
            {
              type: 'VerifiedDNSZone',
              status: 'False',
              reason: 'NoZone',
              message: `no DNSZone for example.com in namespace ${mine}; publish the TXT record or the HTTP token instead`,
              lastTransitionTime: '2026-01-01T00:00:00Z',
              observedGeneration: 3,
            },
            {
              type: 'Verified',
              status: 'False',
              reason: 'ClaimedByOtherNamespace',
              message: `example.com is claimed and verified by Domain d in namespace ${theirs}, which holds it`,
              lastTransitionTime: '2026-01-01T00:00:00Z',
              observedGeneration: 3,
            },
          ],
        },
      },
      'a',
      origins,
    );
    assert.deepEqual(status, {
      observedGeneration: 1,
      apex: 'example.com',
      verification: {
        dnsRecord: { name: '_zonekeeper-challenge.example.com', type: 'TXT', content: 'tok-1' },
      },
      conditions: [
        {
          type: 'VerifiedDNSZone',
          status: 'False',
          reason: 'NoZone',
          message:
            'no DNSZone for example.com in namespace team; publish the TXT record or the HTTP token instead',
          lastTransitionTime: '2026-01-01T00:00:00Z',
          observedGeneration: 1,
        },
        {
          type: 'Verified',
          status: 'False',
          reason: 'ClaimedByOtherNamespace',
          message:
            "example.com is claimed and verified by Domain d in namespace another cluster's object, which holds it",
          lastTransitionTime: '2026-01-01T00:00:00Z',
          observedGeneration: 1,
        },
      ],
    });
    assert.doesNotMatch(JSON.stringify(status), /secret-team|\bb--/);
  });

  test('text without mirrored namespaces is unchanged', () => {
    assert.equal(upstreamText('zone example.com. served', 'a', origins), 'zone example.com. served');
  });
});

describe('multicluster claims', () => {
  test('the first observed claim owns the domain; the next takes over when it lets go', () => {
    const t1 = new Date('2026-01-01T00:00:00Z');
    const t2 = new Date('2026-01-01T00:00:05Z');
    let r = withClaimant(undefined, 'example.com', 'b', t1);
    r = withClaimant(r, 'example.com', 'a', t2);
    assert.equal(ownerOf(r)?.cluster, 'b');
    // Observing again does not move the time.
    assert.equal(withClaimant(r, 'example.com', 'b', new Date('2030-01-01T00:00:00Z')), r);
    r = withoutClaimant(r, 'b');
    assert.equal(ownerOf(r)?.cluster, 'a');
    assert.equal(ownerOf(withoutClaimant(r, 'a')), undefined);
  });

  test('ConfigMap data round trip; malformed data is refused or filtered', () => {
    const r = withClaimant(undefined, 'example.com', 'a', new Date(0));
    assert.deepEqual(claimFromData(claimData(r)), r);
    assert.equal(claimFromData({ domain: 'x', claimants: '{' }), undefined);
    assert.deepEqual(claimFromData({ domain: 'x', claimants: '[{"cluster":1}]' }), {
      domain: 'x',
      claimants: [],
    });
  });
});

describe('multicluster mapping: front-door kinds', () => {
  const origins: NamespaceOrigins = (ns) =>
    ns === mirrorNamespace('alpha', 'team') ? { cluster: 'alpha', namespace: 'team' } : undefined;

  test('a DNSEndpoint copy keeps its group, kind and spec; it is mirrored, and no zone kind', () => {
    assert.ok(isMirroredKind(DNSENDPOINT));
    assert.ok(MIRRORED_KINDS.includes(DATUM_ZONE));
    assert.ok(!MIRRORED_KIND_INFO[DNSENDPOINT].zone);
    assert.ok(MIRRORED_KIND_INFO[DATUM_ZONE].zone);
    const spec = { endpoints: [{ dnsName: 'www.a.example', recordType: 'A', targets: ['192.0.2.1'] }] };
    const { object } = mirrorOf(
      DNSENDPOINT,
      {
        metadata: { name: 'web', namespace: 'team', generation: 3, labels: { [CLUSTER_LABEL]: 'beta' } },
        spec,
      },
      { cluster: 'alpha', namespaces: [] },
    );
    assert.equal(object.apiVersion, 'externaldns.k8s.io/v1alpha1');
    assert.equal(object.kind, 'DNSEndpoint');
    assert.equal(object.metadata.namespace, mirrorNamespace('alpha', 'team'));
    assert.equal(object.metadata.labels[CLUSTER_LABEL], 'alpha');
    assert.deepEqual(object.spec, spec);
  });

  test('a Datum status (no observedGeneration at the top) comes back once its Accepted is current; domainRef is not copied', () => {
    const copy = (observed: number) => ({
      metadata: { generation: 4, annotations: { [GENERATION_ANNOTATION]: '2' } },
      status: {
        conditions: [
          {
            type: 'Accepted',
            status: 'True',
            reason: 'Accepted',
            message: 'ok',
            lastTransitionTime: 't',
            observedGeneration: observed,
          },
        ],
        nameservers: ['ns1.example.net'],
        domainRef: { name: 'downstream-one' },
      },
    });
    assert.equal(upstreamStatus(DATUM_ZONE, copy(3), 'alpha', origins), undefined, 'stale: not copied');
    const status = upstreamStatus(DATUM_ZONE, copy(4), 'alpha', origins)!;
    assert.equal(status.observedGeneration, undefined);
    assert.equal((status.conditions as { observedGeneration: number }[])[0]!.observedGeneration, 2);
    assert.deepEqual(status.nameservers, ['ns1.example.net']);
    assert.equal(status.domainRef, undefined);
  });

  test("a refusal in Datum's shape has Accepted and Programmed only, no observedGeneration at the top", () => {
    const status = refusedStatus(
      'ClaimedByAnotherCluster',
      'm',
      5,
      undefined,
      new Date(0),
      'acceptedProgrammed',
    );
    assert.equal(status.observedGeneration, undefined);
    assert.deepEqual(
      (status.conditions as { type: string }[]).map((c) => c.type),
      ['Accepted', 'Programmed'],
    );
  });

  test('a Gardener DNSRecord: its zone and Secret namespaces map into the cluster; its zone comes back only from its own cluster', () => {
    const record = {
      metadata: { name: 'r', namespace: 'team', generation: 2 },
      spec: {
        type: 'zonekeeper',
        secretRef: { name: 's', namespace: 'team' },
        zone: 'team/z',
        name: 'w.a.example',
      },
    };
    const { object } = mirrorOf(GARDENER_RECORD, record, { cluster: 'alpha', namespaces: [] });
    assert.equal(object.apiVersion, 'extensions.gardener.cloud/v1alpha1');
    assert.equal(object.spec.zone, `${mirrorNamespace('alpha', 'team')}/z`);
    assert.deepEqual(object.spec.secretRef, { name: 's', namespace: mirrorNamespace('alpha', 'team') });
    const domainZone = mirrorOf(
      GARDENER_RECORD,
      { ...record, spec: { ...record.spec, zone: 'a.example' } },
      { cluster: 'alpha', namespaces: [] },
    );
    assert.equal(domainZone.object.spec.zone, 'a.example', 'a domain stays a domain');
    assert.ok(mirrorable(GARDENER_RECORD, record, ['zonekeeper']));
    assert.ok(
      !mirrorable(GARDENER_RECORD, { ...record, spec: { ...record.spec, type: 'aws-route53' } }, [
        'zonekeeper',
      ]),
    );
    const copy = (zone: string) => ({
      metadata: { generation: 7, annotations: { [GENERATION_ANNOTATION]: '2' } },
      status: {
        observedGeneration: 7,
        zone,
        lastOperation: {
          type: 'Reconcile',
          state: 'Error',
          description: `refused by ${mirrorNamespace('beta', 'x')}/z`,
        },
      },
    });
    const own = upstreamStatus(
      GARDENER_RECORD,
      copy(`${mirrorNamespace('alpha', 'team')}/z`),
      'alpha',
      origins,
    )!;
    assert.equal(own.zone, 'team/z');
    assert.equal(own.observedGeneration, 2);
    const betaOrigins: NamespaceOrigins = (ns) =>
      origins(ns) ?? (ns === mirrorNamespace('beta', 'x') ? { cluster: 'beta', namespace: 'x' } : undefined);
    const foreign = upstreamStatus(
      GARDENER_RECORD,
      copy(`${mirrorNamespace('beta', 'x')}/z`),
      'alpha',
      betaOrigins,
    )!;
    assert.equal(foreign.zone, undefined);
    assert.doesNotMatch(JSON.stringify(foreign), /beta/);
  });

  test('a Gardener refusal follows the extension contract; its time holds while the error does not change', () => {
    const first = refusedStatus('NamespaceTaken', 'm', 3, undefined, new Date(0), 'gardener');
    assert.equal(first.observedGeneration, 3);
    assert.deepEqual((first.lastError as { codes: string[] }).codes, ['ERR_CONFIGURATION_PROBLEM']);
    const again = refusedStatus('NamespaceTaken', 'm', 3, undefined, new Date(60_000), 'gardener', first);
    assert.deepEqual(again, first);
  });
});

describe('multicluster mapping: kubizone Zone and Record, homelab DNSRecord', () => {
  const zone = (cluster: string, namespace: string, spec: Record<string, unknown>, known: string[] = []) =>
    mirrorOf(
      KUBIZONE_ZONE,
      { metadata: { name: 'z', namespace, generation: 1 }, spec },
      { cluster, namespaces: known },
    );
  const asZone = (o: ReturnType<typeof zone>['object']) => o as unknown as ZoneObject;

  test('an empty delegation namespace list becomes the explicit list of the same cluster’s namespaces', () => {
    const { object, problems } = zone(
      'alpha',
      'team',
      {
        domainName: 'a.example.',
        delegations: [{ records: [{ pattern: '*' }] }, { namespaces: [], zones: ['*'] }],
      },
      ['web', 'team'],
    );
    assert.deepEqual(problems, []);
    const expected = [mirrorNamespace('alpha', 'team'), mirrorNamespace('alpha', 'web')];
    const delegations = object.spec.delegations as {
      namespaces: string[];
      records?: unknown;
      zones?: unknown;
    }[];
    assert.deepEqual(delegations[0]!.namespaces, expected);
    assert.deepEqual(delegations[0]!.records, [{ pattern: '*' }]);
    assert.deepEqual(delegations[1]!.namespaces, expected);
    assert.deepEqual(delegations[1]!.zones, ['*']);
  });

  test('no cluster known besides the Zone’s own namespace: the list is that namespace, never empty', () => {
    const { object } = zone('alpha', 'team', {
      domainName: 'a.example.',
      delegations: [{ records: [{ pattern: '*' }] }],
    });
    assert.deepEqual((object.spec.delegations as { namespaces: string[] }[])[0]!.namespaces, [
      mirrorNamespace('alpha', 'team'),
    ]);
  });

  test('named namespaces and zoneRefs map into the same cluster; a long list is split, never widened', () => {
    const { object } = zone('alpha', 'team', {
      domainName: 'a.example.',
      delegations: [{ namespaces: ['web', 'web', 'ops'], records: [{ pattern: 'www' }] }],
    });
    assert.deepEqual((object.spec.delegations as { namespaces: string[] }[])[0]!.namespaces, [
      mirrorNamespace('alpha', 'web'),
      mirrorNamespace('alpha', 'ops'),
    ]);
    // Naming another cluster's downstream namespace outright names a namespace of alpha's own.
    const forged = zone('alpha', 'team', {
      domainName: 'a.example.',
      delegations: [{ namespaces: [mirrorNamespace('beta', 'web')], records: [{ pattern: '*' }] }],
    }).object;
    const forgedNamespaces = (forged.spec.delegations as { namespaces: string[] }[])[0]!.namespaces;
    assert.deepEqual(forgedNamespaces, [mirrorNamespace('alpha', mirrorNamespace('beta', 'web'))]);
    assert.ok(!forgedNamespaces.includes(mirrorNamespace('beta', 'web')));
    const many = Array.from({ length: 600 }, (_, i) => `ns${i}`);
    const split = zone(
      'alpha',
      'team',
      { domainName: 'a.example.', delegations: [{ records: [{ pattern: '*' }] }] },
      many,
    );
    const entries = split.object.spec.delegations as { namespaces: string[] }[];
    assert.equal(entries.length, 3);
    assert.ok(entries.every((e) => e.namespaces.length > 0 && e.namespaces.length <= 256));
    assert.equal(entries.flatMap((e) => e.namespaces).length, 601);
    const record = mirrorOf(
      KUBIZONE_RECORD,
      {
        metadata: { name: 'r', namespace: 'web' },
        spec: { domainName: 'www', zoneRef: { name: 'z', namespace: 'team' }, type: 'A', rdata: '192.0.2.1' },
      },
      { cluster: 'beta', namespaces: [] },
    ).object;
    assert.deepEqual(record.spec.zoneRef, { name: 'z', namespace: mirrorNamespace('beta', 'team') });
    assert.equal(record.apiVersion, 'kubi.zone/v1alpha1');
    assert.equal(record.kind, 'Record');
  });

  test('hostile: a Record of cluster beta is not adopted by alpha’s Zone, even with an empty namespace list and a matching name', () => {
    const alphaZone = asZone(
      zone(
        'alpha',
        'team',
        { domainName: 'a.example.', delegations: [{ namespaces: [], records: [{ pattern: '*' }] }] },
        ['team', 'web'],
      ).object,
    );
    const recordOf = (cluster: string, namespace: string, spec: Record<string, unknown>) =>
      mirrorOf(KUBIZONE_RECORD, { metadata: { name: 'r', namespace }, spec }, { cluster, namespaces: [] })
        .object as unknown as RecordObject;
    // alpha's own Record in another namespace is adopted (the empty list admits alpha's namespaces).
    const own = adoptRecord(
      recordOf('alpha', 'web', { domainName: 'www.a.example.', type: 'A', rdata: '192.0.2.1' }),
      [alphaZone],
    );
    assert.equal(own.ok, true);
    // beta's Record with the same namespace name and a name in alpha's zone: refused.
    for (const spec of [
      { domainName: 'evil.a.example.', type: 'A', rdata: '192.0.2.66' },
      // zoneRef to "team/z": beta's own team namespace, where alpha's Zone is not.
      { domainName: 'evil', zoneRef: { name: 'z', namespace: 'team' }, type: 'A', rdata: '192.0.2.66' },
      { domainName: 'evil', zoneRef: { name: 'z' }, type: 'A', rdata: '192.0.2.66' },
    ]) {
      for (const ns of ['web', 'team']) {
        const adoption = adoptRecord(recordOf('beta', ns, spec), [alphaZone]);
        assert.equal(adoption.ok, false, JSON.stringify({ ns, spec }));
      }
    }
    // A sub-zone of beta below alpha's zone is not placed under it either.
    const betaSub = asZone(
      zone('beta', 'team', { domainName: 'sub.a.example.', delegations: [{ records: [{ pattern: '*' }] }] })
        .object,
    );
    assert.equal(placeZone(betaSub, [alphaZone, betaSub]).ok, false);
  });

  test('a kubizone Zone’s domain for the claims: through its parents in the same cluster, or unknown', () => {
    const zones = new Map<string, UpstreamObject>([
      ['team/root', { metadata: { name: 'root', namespace: 'team' }, spec: { domainName: 'K.Example.' } }],
      [
        'team/dev',
        {
          metadata: { name: 'dev', namespace: 'team' },
          spec: { domainName: 'dev', zoneRef: { name: 'root' } },
        },
      ],
      [
        'team/loop-a',
        {
          metadata: { name: 'loop-a', namespace: 'team' },
          spec: { domainName: 'a', zoneRef: { name: 'loop-b' } },
        },
      ],
      [
        'team/loop-b',
        {
          metadata: { name: 'loop-b', namespace: 'team' },
          spec: { domainName: 'b', zoneRef: { name: 'loop-a' } },
        },
      ],
    ]);
    const lookup = (key: string) => zones.get(key);
    assert.equal(kubizoneZoneFqdn(zones.get('team/root')!, lookup), 'k.example.');
    const web = {
      metadata: { name: 'x', namespace: 'web' },
      spec: { domainName: 'x', zoneRef: { name: 'dev', namespace: 'team' } },
    };
    assert.equal(kubizoneZoneFqdn(web, lookup), 'x.dev.k.example.');
    // zoneRef without a namespace: the Zone's own namespace (web has no "dev"); a loop; a missing parent.
    assert.equal(
      kubizoneZoneFqdn({ ...web, spec: { domainName: 'x', zoneRef: { name: 'dev' } } }, lookup),
      undefined,
    );
    assert.equal(kubizoneZoneFqdn(zones.get('team/loop-a')!, lookup), undefined);
    assert.equal(kubizoneZoneFqdn({ metadata: { name: 'y' }, spec: { domainName: 'y' } }, lookup), undefined);
    assert.ok(MIRRORED_KIND_INFO[KUBIZONE_ZONE].zone);
    assert.ok(!MIRRORED_KIND_INFO[KUBIZONE_RECORD].zone);
    assert.ok(!MIRRORED_KIND_INFO[HOMELAB_RECORD].zone);
  });

  test('kubizone status comes back with its Ready condition, namespaces of the same cluster mapped back', () => {
    const origins: NamespaceOrigins = (ns) =>
      ns === mirrorNamespace('alpha', 'team')
        ? { cluster: 'alpha', namespace: 'team' }
        : ns === mirrorNamespace('beta', 'team')
          ? { cluster: 'beta', namespace: 'team' }
          : undefined;
    const copy = {
      metadata: { generation: 3, annotations: { [GENERATION_ANNOTATION]: '7' } },
      status: {
        fqdn: 'www.a.example.',
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'NotDelegated',
            message: `Zone ${mirrorNamespace('beta', 'team')}/z (a.example.) has no delegation admitting A www.a.example. from namespace ${mirrorNamespace('alpha', 'team')}`,
            lastTransitionTime: 't',
            observedGeneration: 3,
          },
        ],
      },
    };
    const stale = structuredClone(copy);
    stale.status.conditions[0]!.observedGeneration = 2;
    assert.equal(
      upstreamStatus(KUBIZONE_RECORD, stale, 'alpha', origins),
      undefined,
      'a Ready judged at an older generation of the copy is not passed up',
    );
    const status = upstreamStatus(KUBIZONE_RECORD, copy, 'alpha', origins)!;
    const ready = (status.conditions as { message: string; observedGeneration: number }[])[0]!;
    assert.equal(ready.observedGeneration, 7);
    assert.equal(status.fqdn, 'www.a.example.');
    assert.ok(!ready.message.includes(mirrorNamespace('beta', 'team')));
    assert.match(ready.message, /another cluster's object/);
    assert.match(ready.message, /from namespace team$/);
    assert.equal(
      upstreamStatus(KUBIZONE_RECORD, { ...copy, status: { conditions: [] } }, 'alpha', origins),
      undefined,
    );
    assert.deepEqual(refusedStatus('NamespaceTaken', 'm', 2, undefined, new Date(0), 'ready'), {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'NamespaceTaken',
          message: 'm',
          lastTransitionTime: '1970-01-01T00:00:00Z',
          observedGeneration: 2,
        },
      ],
    });
  });

  test('a homelab DNSRecord names its DNSClass per cluster; its refusal is in the homelab shape', () => {
    const up = (cluster: string) =>
      mirrorOf(
        HOMELAB_RECORD,
        {
          metadata: { name: 'r', namespace: 'team' },
          spec: {
            type: 'A',
            domain: 'a.example',
            subdomain: 'www',
            dnsClassRef: { name: 'zonekeeper' },
            values: ['192.0.2.1'],
          },
        },
        { cluster, namespaces: [] },
      ).object;
    const alpha = up('alpha');
    assert.equal(alpha.apiVersion, 'dns.homelab.mortenolsen.pro/v1alpha1');
    assert.deepEqual(alpha.spec.dnsClassRef, { name: mirrorClassName('alpha', 'zonekeeper') });
    assert.notEqual(mirrorClassName('alpha', 'zonekeeper'), mirrorClassName('beta', 'zonekeeper'));
    assert.notEqual((up('beta').spec.dnsClassRef as { name: string }).name, 'zonekeeper');
    const status = refusedStatus('NamespaceTaken', 'm', 4, undefined, new Date(0), 'homelab');
    assert.equal(status.observedGeneration, 4);
    assert.equal(status.state, 'Error');
    assert.deepEqual(status.error, {
      code: 'NamespaceTaken',
      message: 'm',
      timestamp: '1970-01-01T00:00:00Z',
    });
    // The homelab status carries observedGeneration at the top: only a current one goes up, error mapped.
    const origins: NamespaceOrigins = (ns) =>
      ns === mirrorNamespace('beta', 'team') ? { cluster: 'beta', namespace: 'team' } : undefined;
    const back = upstreamStatus(
      HOMELAB_RECORD,
      {
        metadata: { generation: 2, annotations: { [GENERATION_ANNOTATION]: '5' } },
        status: {
          observedGeneration: 2,
          state: 'Error',
          error: { code: 'X', message: `in ${mirrorNamespace('beta', 'team')}/r`, timestamp: 't' },
        },
      },
      'alpha',
      origins,
    )!;
    assert.equal(back.observedGeneration, 5);
    assert.equal((back.error as { message: string }).message, "in another cluster's object");
  });
});

test('hostile upstream, every mirrored kind: its creation time and ownership metadata never reach the copy, so it cannot pass for an older owner', () => {
  // "The older wins" orders by metadata.creationTimestamp; the copy's is set by the downstream API
  // server when the replicator creates it. An upstream claiming 1970 (or carrying owner references,
  // finalizers, or our own annotations) must not make its copy older than a downstream owner.
  const ctx = { cluster: 'a', namespaces: ['team'] };
  for (const kind of MIRRORED_KINDS) {
    const { object } = mirrorOf(
      kind,
      {
        metadata: {
          name: 'www',
          namespace: 'team',
          uid: 'u-1',
          generation: 2,
          creationTimestamp: '1970-01-01T00:00:00Z',
          finalizers: ['hold.example/forever'],
          annotations: {
            [GENERATION_ANNOTATION]: '0',
            'kubectl.kubernetes.io/last-applied-configuration': '{}',
          },
          ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'kube-system', uid: 'x' }],
        } as UpstreamObject['metadata'],
        spec: {},
      },
      ctx,
    );
    assert.deepEqual(
      Object.keys(object.metadata).sort(),
      ['annotations', 'labels', 'name', 'namespace'],
      kind,
    );
    assert.equal(object.metadata.namespace, mirrorNamespace('a', 'team'), kind);
    // Our two annotations (the upstream name and generation) and nothing the upstream wrote.
    assert.equal(Object.keys(object.metadata.annotations).length, 2, kind);
    assert.equal(object.metadata.annotations[GENERATION_ANNOTATION], '2', kind);
    assert.equal(
      object.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'],
      undefined,
      kind,
    );
    assert.equal(JSON.stringify(object).includes('1970'), false, kind);
  }
});
