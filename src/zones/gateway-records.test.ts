import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSRecordSet, DNSZone, Domain } from '../api/index.ts';
import {
  GATEWAY_MANAGER,
  gatewayAddress,
  type HostnameClaim,
  listenerAdmits,
  MANAGED_BY_LABEL,
  OWNER_LABEL,
  planHostname,
  recordSetName,
  routeAttachment,
} from './gateway-records.ts';

const zone = (namespace: string, name: string, domainName: string): DNSZone => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'DNSZone',
  metadata: { name, namespace },
  spec: { domainName, className: 'builtin' },
});
const verified = (namespace: string, domainName: string): Domain => ({
  apiVersion: 'dns.zonekeeper.dev/v1alpha1',
  kind: 'Domain',
  metadata: { name: 'd', namespace, generation: 1 },
  spec: { domainName },
  status: {
    conditions: [
      {
        type: 'Verified',
        status: 'True',
        reason: 'Verified',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  },
});
const claim = (hostname: string, namespace = 'team-a'): HostnameClaim => ({
  hostname,
  owner: {
    kind: 'HTTPRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    namespace,
    name: 'web',
    uid: 'u-1',
  },
  gateway: { namespace, name: 'gw' },
});
const ZONES = [zone('team-a', 'example-com', 'example.com')];
const DOMAINS = [verified('team-a', 'example.com')];
const TARGET = { address: 'quiet-river-3f9a1c.gw.example.net', ipv4: ['192.0.2.10'], ipv6: [] };

describe('Gateway hostnames as record sets', () => {
  test('the DNS address: words and entropy from the UID, stable, under the target domain', () => {
    const a = gatewayAddress('0b7c5d2e-1111-4222-8333-944455556666', 'gw.example.net.');
    assert.match(a, /^[a-z]+-[a-z]+-[0-9a-f]{6}\.gw\.example\.net$/);
    assert.equal(gatewayAddress('0b7c5d2e-1111-4222-8333-944455556666', 'GW.example.net'), a);
    assert.notEqual(gatewayAddress('0b7c5d2e-1111-4222-8333-944455556667', 'gw.example.net'), a);
  });

  test('names: <gateway>-<8 hex of SHA-256(hostname)>', () => {
    assert.match(recordSetName('gw', 'api.example.com'), /^gw-[0-9a-f]{8}$/);
    assert.equal(recordSetName('gw', 'API.example.com.'), recordSetName('gw', 'api.example.com'));
    assert.ok(recordSetName('g'.repeat(300), 'a.example.com').length <= 253);
  });

  test('CNAME below the apex, ALIAS at it, * for a wildcard, labelled with the manager and owner', () => {
    const sub = planHostname(claim('api.example.com'), ZONES, DOMAINS, TARGET, []);
    assert.equal(sub.kind, 'publish');
    const [r] = (sub as { recordSets: DNSRecordSet[] }).recordSets;
    assert.deepEqual(r!.spec, {
      zoneRef: { name: 'example-com' },
      name: 'api',
      type: 'CNAME',
      records: ['quiet-river-3f9a1c.gw.example.net.'],
    });
    assert.equal(r!.metadata.namespace, 'team-a');
    assert.equal(r!.metadata.labels?.[MANAGED_BY_LABEL], GATEWAY_MANAGER);
    assert.equal(r!.metadata.labels?.[OWNER_LABEL], 'HTTPRoute.team-a.web');
    const apex = planHostname(claim('example.com'), ZONES, DOMAINS, TARGET, []);
    assert.equal((apex as { recordSets: DNSRecordSet[] }).recordSets[0]!.spec.type, 'ALIAS');
    assert.equal((apex as { recordSets: DNSRecordSet[] }).recordSets[0]!.spec.name, '@');
    const wild = planHostname(claim('*.apps.example.com'), ZONES, DOMAINS, TARGET, []);
    assert.equal((wild as { recordSets: DNSRecordSet[] }).recordSets[0]!.spec.name, '*.apps');
    const direct = planHostname(
      claim('api.example.com'),
      ZONES,
      DOMAINS,
      { ipv4: ['192.0.2.10'], ipv6: ['2001:db8::10'] },
      [],
    );
    assert.deepEqual(
      (direct as { recordSets: DNSRecordSet[] }).recordSets.map((x) => [x.spec.type, x.spec.records]),
      [
        ['A', ['192.0.2.10']],
        ['AAAA', ['2001:db8::10']],
      ],
    );
  });

  test("refused: no served zone, no verified Domain in the route's namespace, another manager's record set", () => {
    assert.equal(
      (planHostname(claim('api.other.org'), ZONES, DOMAINS, TARGET, []) as { reason: string }).reason,
      'NoZone',
    );
    assert.equal(
      (planHostname(claim('api.example.com', 'team-b'), ZONES, DOMAINS, TARGET, []) as { reason: string })
        .reason,
      'DomainNotVerified',
      'a Domain verified in another namespace does not count',
    );
    const handMade: DNSRecordSet = {
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSRecordSet',
      metadata: { name: 'api', namespace: 'team-a' },
      spec: { zoneRef: { name: 'example-com' }, name: 'api', type: 'A', records: ['198.51.100.1'] },
      status: {
        conditions: [
          {
            type: 'Accepted',
            status: 'True',
            reason: 'Accepted',
            message: 'served',
            lastTransitionTime: '2026-11-26T00:00:00Z',
          },
        ],
      },
    };
    // A record set the zone refused (e.g. from a namespace it does not delegate to) holds nothing: the
    // Gateway's record is published, not dropped (and then garbage-collected).
    const refused: DNSRecordSet = {
      ...handMade,
      metadata: { name: 'x', namespace: 'evil' },
      spec: {
        ...handMade.spec,
        zoneRef: { name: 'example-com', namespace: 'team-a' },
        type: 'TXT',
        records: ['"x"'],
      },
      status: {
        conditions: [
          {
            type: 'Accepted',
            status: 'False',
            reason: 'NotDelegated',
            message: 'no',
            lastTransitionTime: '2026-11-26T00:00:00Z',
          },
        ],
      },
    };
    assert.equal(planHostname(claim('api.example.com'), ZONES, DOMAINS, TARGET, [refused]).kind, 'publish');
    const c = planHostname(claim('api.example.com'), ZONES, DOMAINS, TARGET, [handMade]);
    assert.equal((c as { reason: string }).reason, 'Conflict');
    assert.match((c as { message: string }).message, /DNSRecordSet team-a\/api; it is not overwritten/);
    // Someone else's object at our name is a conflict too.
    const squat = {
      ...handMade,
      metadata: { name: recordSetName('gw', 'www.example.com'), namespace: 'team-a' },
      spec: { ...handMade.spec, name: 'elsewhere' },
    };
    assert.equal(
      (planHostname(claim('www.example.com'), ZONES, DOMAINS, TARGET, [squat]) as { reason: string }).reason,
      'Conflict',
    );
  });

  test('route attachment: accepted by that parentRef, and a listener it may bind to admits its namespace', () => {
    const accepted = (
      parentRef: { name: string; namespace?: string; sectionName?: string },
      controllerName = 'example.com/gateway',
    ) => ({
      parentRef,
      controllerName,
      conditions: [{ type: 'Accepted', status: 'True' }],
    });
    const gateway = {
      namespace: 'infra',
      name: 'gw',
      controllerName: 'example.com/gateway',
      listeners: [
        { name: 'same', port: 80 },
        { name: 'all', port: 8080, allowedRoutes: { namespaces: { from: 'All' } } },
      ],
    };
    const ref = { name: 'gw', namespace: 'infra' };
    // No status, Accepted=False, or a status for another parent: not attached.
    assert.equal(routeAttachment({ namespace: 'infra' }, ref, gateway).attached, false);
    assert.equal(
      routeAttachment(
        {
          namespace: 'infra',
          parents: [{ parentRef: ref, conditions: [{ type: 'Accepted', status: 'False' }] }],
        },
        ref,
        gateway,
      ).attached,
      false,
    );
    assert.equal(
      routeAttachment(
        { namespace: 'infra', parents: [accepted({ name: 'other', namespace: 'infra' })] },
        ref,
        gateway,
      ).attached,
      false,
    );
    assert.equal(
      routeAttachment({ namespace: 'infra', parents: [accepted(ref)] }, ref, gateway).attached,
      true,
    );
    // Accepted by another gateway implementation (or a status writer naming no controller, or one
    // naming another): not attached, even beside a rejection by the Gateway's own controller.
    const foreign = routeAttachment(
      { namespace: 'infra', parents: [accepted(ref, 'other.example/controller')] },
      ref,
      gateway,
    );
    assert.equal(foreign.attached, false);
    assert.match(!foreign.attached ? foreign.message : '', /controller example\.com\/gateway/);
    assert.equal(
      routeAttachment(
        {
          namespace: 'infra',
          parents: [{ parentRef: ref, conditions: [{ type: 'Accepted', status: 'True' }] }],
        },
        ref,
        gateway,
      ).attached,
      false,
    );
    assert.equal(
      routeAttachment(
        {
          namespace: 'infra',
          parents: [
            accepted(ref, 'other.example/controller'),
            {
              parentRef: ref,
              controllerName: 'example.com/gateway',
              conditions: [{ type: 'Accepted', status: 'False' }],
            },
          ],
        },
        ref,
        gateway,
      ).attached,
      false,
    );
    // A Gateway whose GatewayClass is not known attaches nothing.
    const { controllerName: _, ...classless } = gateway;
    const unknown = routeAttachment({ namespace: 'infra', parents: [accepted(ref)] }, ref, classless);
    assert.equal(unknown.attached, false);
    assert.match(!unknown.attached ? unknown.message : '', /GatewayClass is not known/);
    // Another namespace: only through the listener that admits all, when it may bind to it.
    assert.equal(
      routeAttachment({ namespace: 'team', parents: [accepted(ref)] }, ref, gateway).attached,
      true,
    );
    const toSame = { ...ref, sectionName: 'same' };
    const r = routeAttachment({ namespace: 'team', parents: [accepted(toSame)] }, toSame, gateway);
    assert.equal(r.attached, false);
    assert.match(!r.attached ? r.message : '', /admits routes of namespace team/);
    // Selectors: only the namespace name label is judged.
    const sel = (selector: object) => ({ allowedRoutes: { namespaces: { from: 'Selector', selector } } });
    assert.equal(
      listenerAdmits(sel({ matchLabels: { 'kubernetes.io/metadata.name': 'team' } }), 'team', 'infra'),
      true,
    );
    assert.equal(
      listenerAdmits(sel({ matchLabels: { 'kubernetes.io/metadata.name': 'x' } }), 'team', 'infra'),
      false,
    );
    assert.equal(listenerAdmits(sel({ matchLabels: { env: 'prod' } }), 'team', 'infra'), false);
    assert.equal(
      listenerAdmits(
        sel({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team'] }] }),
        'team',
        'infra',
      ),
      true,
    );
    assert.equal(
      listenerAdmits(
        sel({
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['team'] }],
        }),
        'team',
        'infra',
      ),
      false,
    );
    assert.equal(
      listenerAdmits({ allowedRoutes: { namespaces: { from: 'Selector' } } }, 'team', 'infra'),
      false,
    );
    assert.equal(listenerAdmits({}, 'infra', 'infra'), true, 'Same by default');
  });
});
