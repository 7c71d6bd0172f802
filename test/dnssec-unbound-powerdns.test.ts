/**
 * The PowerDNS path checked by a validating resolver: Unbound on loopback, trusting only the DS the zone's
 * status gives the parent, its queries for the zones stubbed to a real pdns_server (LMDB). Positive
 * answers, NXDOMAIN, NODATA, a wildcard expansion, a CNAME, a secure delegation (a signed child zone, its
 * DS in the parent put there by Zonekeeper) and an insecure one (an unsigned child, the DS's absence
 * proven) come back with the AD bit (RFC 4035 §3.2.3) or, for the insecure child, without it and not as
 * a failure. Through a proxy that rewrites an address or strips the signatures, the same questions are
 * answered SERVFAIL (RFC 4035 §5.5: bogus data is not returned).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { DNSZone } from '../src/api/index.ts';
import type { createBackendFactory } from '../src/backends/registry.ts';
import type { Controller } from '../src/control/controller.ts';
import type { MemoryStore } from '../src/control/memory-store.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type PowerDnsProcess, powerDnsAvailable } from './support/powerdns.ts';
import { startPowerDnsControlled } from './support/powerdns-dnssec.ts';
import { recordSet, zone } from './support/resources.ts';
import { startTamperProxy, type TamperProxy } from './support/tamper-proxy.ts';
import { startUnbound, type UnboundProcess, unboundAvailable } from './support/unbound.ts';
import { removeAll, waitFor } from './support/zonekeeper-process.ts';

const ORIGIN = 'signed.example.';

describe('DNSSEC through PowerDNS validated by Unbound', async () => {
  const unavailable = (await powerDnsAvailable('lmdb')) ?? (await unboundAvailable());
  let pdns: PowerDnsProcess;
  let store: MemoryStore;
  let controller: Controller;
  let factory: ReturnType<typeof createBackendFactory>;
  let dir: string;
  let anchors: string[];
  const resolvers: UnboundProcess[] = [];
  let proxy: TamperProxy | undefined;

  const statusOf = (name: string) => (store.get('DNSZone', `dns/${name}`) as DNSZone | undefined)?.status;
  const dsAt = async (name: string) =>
    rdataOf(await dig(pdns.dnsPort, name, 'DS'), 'DS').map((d) => {
      const [tag, alg, type, ...digest] = d.toLowerCase().split(/\s+/);
      return `${tag} ${alg} ${type} ${digest.join('')}`;
    });

  before(async () => {
    if (unavailable) return;
    ({ pdns, dir, store, factory, controller } = await startPowerDnsControlled({
      pdns: { storage: 'lmdb' },
      dirPrefix: 'dnssec-unbound',
      nameServers: ['ns1.signed.example.'],
      defaults: { ttl: 300, soa: { rname: 'hostmaster@signed.example' } },
    }));
    store.apply(
      zone('dns', 'signed', 'signed.example', {
        className: 'powerdns',
        dnssec: { enabled: true, denial: 'NSEC3' },
      }),
    );
    store.apply(
      zone(
        'dns',
        'child',
        'child.signed.example',
        { className: 'powerdns', dnssec: { enabled: true, algorithm: 'ED25519' } },
        5,
      ),
    );
    store.apply(zone('dns', 'plain', 'plain.signed.example', { className: 'powerdns' }, 5));
    for (const [zoneName, name, type, records] of [
      ['signed', 'ns1', 'A', ['192.0.2.53']],
      ['signed', 'www', 'A', ['192.0.2.10']],
      ['signed', '*.wild', 'TXT', ['"wildcard"']],
      ['signed', 'alias', 'CNAME', ['www']],
      ['child', 'www', 'A', ['192.0.2.20']],
      ['plain', 'www', 'A', ['192.0.2.30']],
    ] as const)
      store.apply(
        recordSet('dns', `${zoneName}-${name.replace(/\W/g, '')}-${type.toLowerCase()}`, {
          zoneRef: { name: zoneName },
          name,
          type,
          records: [...records],
        }),
      );
    controller.start();
    // Both children delegated; the signed one's DS in the parent.
    const { value: ds } = await waitFor(async () => {
      const own = statusOf('signed')?.dnssec?.ds ?? [];
      const child = statusOf('child')?.dnssec?.ds ?? [];
      const held = await dsAt('child.signed.example');
      const plainNs = rdataOf(await dig(pdns.dnsPort, 'plain.signed.example', 'NS'), 'NS');
      return own.length > 0 && child.length > 0 && child.every((d) => held.includes(d)) && plainNs.length > 0
        ? own
        : undefined;
    }, 30_000);
    anchors = ds.map((d) => `${ORIGIN} DS ${d}`);
  });
  after(async () => {
    for (const r of resolvers) await r.stop();
    await proxy?.close();
    controller?.stop();
    factory?.close();
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  const stubsTo = (port: number) =>
    ['signed.example', 'child.signed.example', 'plain.signed.example'].map((z) => ({ zone: z, port }));

  test('validated answers carry AD: positive, NXDOMAIN, NODATA, wildcard, CNAME, secure delegation; the insecure child is insecure', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const unbound = await startUnbound({ stubs: stubsTo(pdns.dnsPort), trustAnchors: anchors });
    resolvers.push(unbound);
    const expect = async (
      name: string,
      type: string,
      status: string,
      check?: (answer: string[]) => boolean,
    ) => {
      const r = await unbound.query(name, type);
      assert.equal(r.status, status, `${name} ${type}: ${r.raw}\n${unbound.log()}`);
      assert.ok(unbound.validated(r), `${name} ${type} validated (AD): ${r.raw}\n${unbound.log()}`);
      if (check) assert.ok(check(r.answer), `${name} ${type}: ${r.answer.join('\n')}`);
    };
    await expect('www.signed.example', 'A', 'NOERROR', (a) => a.some((l) => l.endsWith(' A 192.0.2.10')));
    await expect('nope.signed.example', 'A', 'NXDOMAIN');
    await expect('www.signed.example', 'TXT', 'NOERROR', (a) => a.length === 0);
    await expect('x.wild.signed.example', 'TXT', 'NOERROR', (a) => a.some((l) => l.includes('"wildcard"')));
    await expect('deep.x.wild.signed.example', 'TXT', 'NOERROR', (a) =>
      a.some((l) => l.includes('"wildcard"')),
    );
    await expect(
      'alias.signed.example',
      'A',
      'NOERROR',
      (a) =>
        a.some((l) => l.includes(' CNAME www.signed.example.')) && a.some((l) => l.endsWith(' A 192.0.2.10')),
    );
    // Secure delegation: the child's DS in the parent, the child validated through it.
    await expect('child.signed.example', 'DS', 'NOERROR', (a) => a.some((l) => l.includes(' DS ')));
    await expect('www.child.signed.example', 'A', 'NOERROR', (a) =>
      a.some((l) => l.endsWith(' A 192.0.2.20')),
    );
    await expect('nope.child.signed.example', 'A', 'NXDOMAIN');
    // Insecure delegation: no DS, and its absence proven (AD on the NODATA) ...
    await expect('plain.signed.example', 'DS', 'NOERROR', (a) => a.length === 0);
    // ... so the child's answers are insecure: given, without AD, never SERVFAIL.
    const plain = await unbound.query('www.plain.signed.example', 'A');
    assert.equal(plain.status, 'NOERROR', plain.raw);
    assert.ok(!unbound.validated(plain), 'an insecure child is not marked validated');
    assert.ok(plain.answer.some((l) => l.endsWith(' A 192.0.2.30')));
  });

  test('a rewritten address or stripped signatures: SERVFAIL, where the same path unspoiled validates', async (t) => {
    if (unavailable) return t.skip(unavailable);
    proxy = await startTamperProxy(pdns.dnsPort, { kind: 'none' });
    const unbound = await startUnbound({ stubs: stubsTo(proxy.port), trustAnchors: anchors, cache: false });
    resolvers.push(unbound);
    const clean = await unbound.query('www.signed.example', 'A');
    assert.ok(
      unbound.validated(clean) && clean.status === 'NOERROR',
      `through the proxy, unspoiled: ${clean.raw}`,
    );

    proxy.spoil = { kind: 'tamper', from: '192.0.2.10', to: '192.0.2.99' };
    const tampered = await unbound.query('www.signed.example', 'A');
    assert.equal(tampered.status, 'SERVFAIL', `a rewritten address: ${tampered.raw}`);
    assert.ok(!tampered.answer.some((l) => l.includes('192.0.2.99')), 'the forged address is never given');

    proxy.spoil = { kind: 'strip' };
    for (const [name, type] of [
      ['www.signed.example', 'A'],
      ['nope.signed.example', 'A'],
      ['www.child.signed.example', 'A'],
    ] as const) {
      const stripped = await unbound.query(name, type);
      assert.equal(stripped.status, 'SERVFAIL', `${name} ${type} unsigned: ${stripped.raw}`);
    }
    assert.match(unbound.log(), /validation failure|bogus/i, 'Unbound logged why');
  });
});
