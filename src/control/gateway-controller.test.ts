/**
 * The Gateway DNS controller over a MemoryStore (zones, Domains, record sets) and Gateway API objects
 * held in memory; its writes go into the same store, as the API server would keep them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DNSRecordSet, DNSZone, Domain } from '../api/index.ts';
import { GATEWAY_MANAGER, MANAGED_BY_LABEL } from '../zones/gateway-records.ts';
import {
  GatewayController,
  type GatewayKind,
  type GatewayObject,
  type GatewaySource,
} from './gateway-controller.ts';
import { MemoryStore } from './memory-store.ts';

const T = '2026-01-01T00:00:00Z';

class Objects implements GatewaySource {
  readonly byKind = new Map<GatewayKind, GatewayObject[]>();
  private readonly handlers = new Set<() => void>();
  list(kind: GatewayKind): GatewayObject[] {
    return this.byKind.get(kind) ?? [];
  }
  watch(handler: () => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }
  set(kind: GatewayKind, objects: GatewayObject[]): void {
    this.byKind.set(kind, objects);
    for (const h of this.handlers) h();
  }
}

function setup() {
  const store = new MemoryStore();
  const objects = new Objects();
  objects.byKind.set('GatewayClass', [
    {
      metadata: { name: 'example', namespace: '', uid: 'uid-class' },
      spec: { controllerName: 'example.com/gateway' },
    },
  ]);
  const annotations = new Map<string, Record<string, string | null>>();
  const events: string[] = [];
  const controller = new GatewayController({
    store,
    source: objects,
    targetDomain: 'gw.example.net',
    writer: {
      apply: async (r: DNSRecordSet) => {
        store.apply(r);
      },
      delete: async (ns: string, name: string) => store.remove('DNSRecordSet', `${ns}/${name}`),
      annotate: async (kind, ns, name, a) => {
        annotations.set(`${kind}/${ns}/${name}`, {
          ...(annotations.get(`${kind}/${ns}/${name}`) ?? {}),
          ...a,
        });
      },
      event: (_kind, object, reason) => events.push(`${reason} ${object.metadata.name}`),
    },
  });
  const zone = (namespace: string, name: string, domainName: string): DNSZone => ({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'DNSZone',
    metadata: { name, namespace },
    spec: { domainName, className: 'builtin' },
  });
  store.apply(zone('team-a', 'example-com', 'example.com'));
  store.apply(zone('platform', 'gw', 'gw.example.net'));
  for (const key of ['team-a/example-com', 'platform/gw'])
    void store.updateStatus('DNSZone', key, {
      conditions: [
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: T },
        // Not Ready for a moment (a change being programmed): its hostnames stay.
        { type: 'Ready', status: 'False', reason: 'Pending', message: '', lastTransitionTime: T },
      ],
    });
  return { store, objects, annotations, events, controller };
}

async function verify(store: MemoryStore, namespace: string, domainName: string) {
  store.apply({
    apiVersion: 'dns.zonekeeper.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name: 'd', namespace },
    spec: { domainName },
  } as Domain);
  await store.updateStatus('Domain', `${namespace}/d`, {
    conditions: [
      {
        type: 'Verified',
        status: 'True',
        reason: 'Verified',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: T,
      },
    ],
  });
}

const gateway = (addresses: { type: string; value: string }[], hostname?: string): GatewayObject => ({
  metadata: { name: 'gw', namespace: 'team-a', uid: 'uid-1' },
  spec: { gatewayClassName: 'example', listeners: [{ name: 'http', ...(hostname ? { hostname } : {}) }] },
  status: { addresses },
});
/** A route the gateway implementation accepted (status.parents), unless `accepted` is false. */
const route = (hostnames: string[], accepted = true, namespace = 'team-a'): GatewayObject => ({
  metadata: { name: 'web', namespace, uid: `uid-2-${namespace}` },
  spec: {
    parentRefs: [{ name: 'gw', ...(namespace !== 'team-a' ? { namespace: 'team-a' } : {}) }],
    hostnames,
  },
  ...(accepted
    ? {
        status: {
          parents: [
            {
              parentRef: { name: 'gw', ...(namespace !== 'team-a' ? { namespace: 'team-a' } : {}) },
              controllerName: 'example.com/gateway',
              conditions: [{ type: 'Accepted', status: 'True' }],
            },
          ],
        },
      }
    : {}),
});
const ours = (store: MemoryStore) =>
  (store.list('DNSRecordSet') as DNSRecordSet[])
    .filter((r) => r.metadata.labels?.[MANAGED_BY_LABEL] === GATEWAY_MANAGER)
    .map((r) => `${r.metadata.namespace} ${r.spec.name} ${r.spec.type} ${r.spec.records.join(',')}`)
    .sort();

describe('GatewayController', () => {
  test("nothing without a verified Domain of the route's namespace; records once there is one; gone with the route", async () => {
    const { store, objects, annotations, controller } = setup();
    objects.set('Gateway', [gateway([{ type: 'IPAddress', value: '192.0.2.10' }])]);
    objects.set('HTTPRoute', [route(['api.example.com'])]);
    await verify(store, 'team-b', 'example.com');
    controller.start();
    await controller.idle();
    const address = annotations.get('Gateway/team-a/gw')?.['dns.zonekeeper.dev/gateway-address'];
    assert.match(String(address), /^[a-z]+-[a-z]+-[0-9a-f]{6}\.gw\.example\.net$/);
    const label = String(address).slice(0, -'.gw.example.net'.length);
    assert.deepEqual(ours(store), [`platform ${label} A 192.0.2.10`], 'only the address itself');
    await verify(store, 'team-a', 'example.com');
    await controller.idle();
    assert.deepEqual(ours(store), [`platform ${label} A 192.0.2.10`, `team-a api CNAME ${address}.`]);
    objects.set('HTTPRoute', []);
    await controller.idle();
    assert.deepEqual(ours(store), [`platform ${label} A 192.0.2.10`]);
    controller.stop();
  });

  test('a Gateway with a host name address gets a CNAME; a listener and a route with one hostname make one record set', async () => {
    const { store, objects, annotations, controller } = setup();
    await verify(store, 'team-a', 'example.com');
    objects.set('Gateway', [
      gateway([{ type: 'Hostname', value: 'lb-123.elb.example.org' }], 'www.example.com'),
    ]);
    objects.set('HTTPRoute', [route(['www.example.com'])]);
    controller.start();
    await controller.idle();
    const address = String(annotations.get('Gateway/team-a/gw')?.['dns.zonekeeper.dev/gateway-address']);
    const label = address.slice(0, -'.gw.example.net'.length);
    assert.deepEqual(ours(store), [
      `platform ${label} CNAME lb-123.elb.example.org.`,
      `team-a www CNAME ${address}.`,
    ]);
    assert.equal(
      annotations.get('HTTPRoute/team-a/web')?.['dns.zonekeeper.dev/dns-conflicts'],
      undefined,
      'not a conflict',
    );
    controller.stop();
  });

  test('a route publishes only through a Gateway that accepted it and whose listener admits its namespace', async () => {
    const { store, objects, controller } = setup();
    await verify(store, 'team-a', 'example.com');
    store.apply({
      apiVersion: 'dns.zonekeeper.dev/v1alpha1',
      kind: 'DNSZone',
      metadata: { name: 'other', namespace: 'team-b' },
      spec: { domainName: 'other.example', className: 'builtin' },
    });
    await store.updateStatus('DNSZone', 'team-b/other', {
      conditions: [
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: T },
      ],
    });
    await verify(store, 'team-b', 'other.example');
    const gw = gateway([{ type: 'IPAddress', value: '192.0.2.10' }]);
    objects.set('Gateway', [gw]);
    // Not accepted by the Gateway (no status.parents): nothing.
    objects.set('HTTPRoute', [route(['api.example.com'], false)]);
    controller.start();
    await controller.idle();
    const routed = () => ours(store).filter((r) => !r.startsWith('platform'));
    assert.deepEqual(routed(), []);
    // Accepted, but by another gateway implementation (status.parents controllerName is not the
    // controllerName of the Gateway's GatewayClass): nothing.
    const foreign = route(['api.example.com']);
    foreign.status!.parents![0]!.controllerName = 'other.example/controller';
    objects.set('HTTPRoute', [foreign]);
    await controller.idle();
    assert.deepEqual(routed(), []);
    objects.set('HTTPRoute', [route(['api.example.com'])]);
    await controller.idle();
    assert.deepEqual(routed().length, 1, 'accepted: published');
    // The GatewayClass goes away: its Gateways attach no route any more.
    objects.set('GatewayClass', []);
    await controller.idle();
    assert.deepEqual(routed(), []);
    objects.set('GatewayClass', [
      {
        metadata: { name: 'example', namespace: '', uid: 'uid-class' },
        spec: { controllerName: 'example.com/gateway' },
      },
    ]);
    await controller.idle();
    assert.deepEqual(routed().length, 1, 'class back: published');
    // A route of another namespace, accepted (as its status claims), but the listener admits only
    // routes of the Gateway's own namespace (allowedRoutes default Same): nothing.
    objects.set('HTTPRoute', [route(['b.other.example'], true, 'team-b')]);
    await controller.idle();
    assert.deepEqual(routed(), []);
    objects.set('Gateway', [
      {
        ...gw,
        spec: {
          gatewayClassName: 'example',
          listeners: [
            {
              name: 'http',
              allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { team: 'b' } } } },
            },
          ],
        },
      },
    ]);
    await controller.idle();
    assert.deepEqual(routed(), [], 'a selector on labels that are not read admits nothing');
    objects.set('Gateway', [
      {
        ...gw,
        spec: {
          gatewayClassName: 'example',
          listeners: [
            {
              name: 'http',
              allowedRoutes: {
                namespaces: {
                  from: 'Selector',
                  selector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-b' } },
                },
              },
            },
          ],
        },
      },
    ]);
    await controller.idle();
    assert.equal(routed().length, 1, 'admitted by the namespace name label');
    assert.match(routed()[0]!, /^team-b b CNAME /);
    controller.stop();
  });

  test('two Gateways claiming one hostname: the older publishes, the newer is told why, no flapping', async () => {
    const { store, objects, annotations, events, controller } = setup();
    await verify(store, 'team-a', 'example.com');
    const older: GatewayObject = {
      metadata: {
        name: 'gw-b',
        namespace: 'team-a',
        uid: 'uid-old',
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      spec: { listeners: [{ name: 'http', hostname: 'shop.example.com' }] },
      status: { addresses: [{ type: 'IPAddress', value: '192.0.2.1' }] },
    };
    const newer: GatewayObject = {
      metadata: {
        name: 'gw-a',
        namespace: 'team-a',
        uid: 'uid-new',
        creationTimestamp: '2026-02-01T00:00:00Z',
      },
      spec: { listeners: [{ name: 'http', hostname: 'shop.example.com' }] },
      status: { addresses: [{ type: 'IPAddress', value: '192.0.2.2' }] },
    };
    objects.set('Gateway', [newer, older]);
    controller.start();
    const shop = () => ours(store).filter((r) => r.startsWith('team-a shop'));
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) {
      await controller.idle();
      seen.add(JSON.stringify(shop()));
      // Any change of the store makes the controller run again (as the record sets' status would).
      objects.set('Gateway', [newer, older]);
    }
    await controller.idle();
    assert.equal(seen.size, 1, `the same answer every run: ${[...seen].join(' | ')}`);
    const address = String(annotations.get('Gateway/team-a/gw-b')?.['dns.zonekeeper.dev/gateway-address']);
    assert.deepEqual(shop(), [`team-a shop CNAME ${address}.`], 'the older Gateway publishes');
    assert.match(
      String(annotations.get('Gateway/team-a/gw-a')?.['dns.zonekeeper.dev/dns-conflicts']),
      /shop\.example\.com is published for Gateway team-a\/gw-b, which is older/,
    );
    assert.equal(annotations.get('Gateway/team-a/gw-b')?.['dns.zonekeeper.dev/dns-conflicts'] ?? null, null);
    assert.ok(events.includes('DNSConflict gw-a'));
    controller.stop();
  });
});
