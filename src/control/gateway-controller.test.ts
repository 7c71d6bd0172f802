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
  const annotations = new Map<string, Record<string, string | null>>();
  const events: string[] = [];
  const controller = new GatewayController({
    store,
    source: objects,
    targetDomain: 'gw.example.net',
    writer: {
      apply: async (r: DNSRecordSet) => store.apply(r),
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
  spec: { listeners: [{ name: 'http', ...(hostname ? { hostname } : {}) }] },
  status: { addresses },
});
const route = (hostnames: string[]): GatewayObject => ({
  metadata: { name: 'web', namespace: 'team-a', uid: 'uid-2' },
  spec: { parentRefs: [{ name: 'gw' }], hostnames },
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
});
