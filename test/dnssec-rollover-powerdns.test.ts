/**
 * Rollovers that move the parent's DS, through the PowerDNS backend on compressed time (TTLs of 2 s, an
 * SOA refresh of 1 s, resyncs every second), against a real pdns_server (LMDB):
 *
 * - an algorithm rollover (ECDSAP256SHA256 → ED25519, keys: Split) of a child zone whose signed parent
 *   Zonekeeper manages on the same server: the parent's DS follows the child's status, and `delv`, trusting
 *   only the parent's key, validates the child at every moment; every RRset is signed by every algorithm
 *   of the DNSKEY RRset throughout (RFC 4035 §2.2);
 * - an algorithm rollover of a zone whose parent Zonekeeper cannot see: the rollover waits in DsChange,
 *   saying which DS to give the parent, and goes on when the operator records it in the annotation; delv
 *   trusts only the DS the simulated parent holds at each moment;
 * - a KSK rollover (double-KSK) of a child of a managed parent, validated at every moment.
 *
 * Under a managed parent, Unbound — caching what the rollover replaces, as resolvers in the field do —
 * validates beside delv at every moment too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { DNSZone } from '../src/api/index.ts';
import type { createBackendFactory } from '../src/backends/registry.ts';
import type { Controller } from '../src/control/controller.ts';
import type { MemoryStore } from '../src/control/memory-store.ts';
import { parseDnskey } from '../src/dns/dnssec/keys.ts';
import { delv, dsTrustAnchorFile, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf } from './support/dig.ts';
import { type PowerDnsProcess, powerDnsAvailable } from './support/powerdns.ts';
import { startPowerDnsControlled } from './support/powerdns-dnssec.ts';
import { recordSet, zone } from './support/resources.ts';
import { startUnbound, type UnboundProcess, unboundAvailable } from './support/unbound.ts';
import { removeAll, waitFor } from './support/zonekeeper-process.ts';

const FAST = { ttl: 2, soa: { refresh: 1, minimum: 2 } } as const;

describe('DNSSEC rollovers that move the DS, through PowerDNS (compressed time)', async () => {
  const unavailable = await powerDnsAvailable('lmdb');
  let pdns: PowerDnsProcess;
  let store: MemoryStore;
  let controller: Controller;
  let factory: ReturnType<typeof createBackendFactory>;
  let dir: string;
  const noUnbound = await unboundAvailable();
  const resolvers: UnboundProcess[] = [];

  /**
   * Unbound (caching, as in the field) trusting only the parent's DS, the parent and `child` stubbed to
   * PowerDNS: a second validator whose cache holds what the rollover replaces.
   */
  const resolverFor = async (child: string) => {
    if (noUnbound) return undefined;
    const ds = statusOf('parent')!.dnssec!.ds!;
    const unbound = await startUnbound({
      stubs: ['parent.example', child].map((zone) => ({ zone, port: pdns.dnsPort })),
      trustAnchors: ds.map((d) => `parent.example. DS ${d}`),
    });
    resolvers.push(unbound);
    return async (name: string, type: string) => {
      const r = await unbound.query(name, type);
      assert.ok(
        r.status !== 'SERVFAIL' && unbound.validated(r),
        `Unbound did not validate ${name} ${type} during the rollover: ${r.raw}\n${unbound.log()}`,
      );
    };
  };

  before(async () => {
    if (unavailable) return;
    ({ pdns, dir, store, factory, controller } = await startPowerDnsControlled({
      pdns: { storage: 'lmdb' },
      dirPrefix: 'dnssec-keyroll',
      nameServers: ['ns1.parent.example.'],
    }));
    // The parent: signed (a CSK that never rolls), the trust anchor of the children below it.
    store.apply(
      zone('dns', 'parent', 'parent.example', { className: 'powerdns', ...FAST, dnssec: { enabled: true } }),
    );
    controller.start();
  });
  after(async () => {
    for (const r of resolvers) await r.stop();
    controller?.stop();
    factory?.close();
    await pdns?.stop();
    if (dir) await removeAll(dir);
  });

  const statusOf = (name: string) => (store.get('DNSZone', `dns/${name}`) as DNSZone | undefined)?.status;
  const keysOf = async (origin: string) =>
    rdataOf(await dig(pdns.dnsPort, origin, 'DNSKEY'), 'DNSKEY').map((k) => parseDnskey(k));
  const dsAt = async (origin: string) =>
    rdataOf(await dig(pdns.dnsPort, origin, 'DS'), 'DS').map((d) => {
      const [tag, alg, type, ...digest] = d.toLowerCase().split(/\s+/);
      return `${tag} ${alg} ${type} ${digest.join('')}`;
    });
  const sigAlgorithms = async (name: string, type: string) =>
    new Set(
      rdataOf(await dig(pdns.dnsPort, name, type, { args: ['+dnssec'] }), 'RRSIG')
        .filter((r) => r.split(' ')[0] === type)
        .map((r) => Number(r.split(' ')[1])),
    );
  /** RFC 4035 §2.2: the RRset carries an RRSIG of every algorithm in the apex DNSKEY RRset. */
  const signedByEvery = async (origin: string, name: string, type: string) => {
    const dnskeyAlgs = new Set((await keysOf(origin)).map((k) => k.algorithm));
    const sigAlgs = await sigAlgorithms(name, type);
    for (const a of dnskeyAlgs)
      assert.ok(
        sigAlgs.has(a),
        `${name} ${type} lacks an RRSIG of algorithm ${a} (DNSKEY has ${[...dnskeyAlgs]}, RRSIGs ${[...sigAlgs]})`,
      );
  };
  const childZone = (
    name: string,
    domain: string,
    dnssec: NonNullable<DNSZone['spec']['dnssec']>,
    generation = 1,
  ) => {
    const z = zone('dns', name, domain, { className: 'powerdns', ...FAST, dnssec }, 5);
    return { ...z, metadata: { ...z.metadata, generation } };
  };
  const www = (zoneName: string, address: string) =>
    recordSet('dns', `${zoneName}-www`, {
      zoneRef: { name: zoneName },
      name: 'www',
      type: 'A',
      records: [address],
    });

  test('algorithm rollover under a managed parent: the DS follows, delv validates from the parent key throughout', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const origin = 'algo.parent.example.';
    const split13 = { enabled: true, keys: 'Split', algorithm: 'ECDSAP256SHA256' } as const;
    store.apply(childZone('algo', 'algo.parent.example', split13));
    store.apply(www('algo', '192.0.2.21'));
    // The child's DS in the parent, then only the parent's key is trusted.
    await waitFor(async () => {
      const ds = statusOf('algo')?.dnssec?.ds ?? [];
      const held = await dsAt(origin);
      return ds.length > 0 && ds.every((d) => held.includes(d)) ? true : undefined;
    }, 30_000);
    const anchors = await trustAnchorFile(dir, pdns.dnsPort, 'parent.example.');
    assert.match(
      (await delv(pdns.dnsPort, anchors, 'parent.example.', 'www.algo.parent.example', 'A')).verdict,
      /^fully validated/,
    );

    const unbound = await resolverFor('algo.parent.example');
    await unbound?.('www.algo.parent.example', 'A');
    store.apply(childZone('algo', 'algo.parent.example', { ...split13, algorithm: 'ED25519' }, 2));
    const phases: string[] = [];
    const order = new Set<string>();
    let checks = 0;
    await waitFor(async () => {
      const r = await delv(pdns.dnsPort, anchors, 'parent.example.', 'www.algo.parent.example', 'A');
      assert.match(
        r.verdict,
        /^fully validated/,
        `validation failed during the algorithm rollover: ${r.raw}`,
      );
      const nx = await delv(pdns.dnsPort, anchors, 'parent.example.', 'nope.algo.parent.example', 'A');
      assert.match(
        nx.verdict,
        /negative response, fully validated/,
        `NXDOMAIN during the rollover: ${nx.raw}`,
      );
      await signedByEvery(origin, `www.${origin}`, 'A');
      await signedByEvery(origin, origin, 'DNSKEY');
      await unbound?.('www.algo.parent.example', 'A');
      await unbound?.('nope.algo.parent.example', 'A');
      // The order of RFC 6781 §4.1.4, as served: the new algorithm signs before its DNSKEYs appear, and
      // the old one still signs after its DNSKEYs are gone.
      const published = new Set((await keysOf(origin)).map((k) => k.algorithm));
      const signing = await sigAlgorithms(`www.${origin}`, 'A');
      if (!published.has(15) && signing.has(15)) order.add('15 signs hidden');
      if (published.has(15))
        assert.ok(order.has('15 signs hidden'), 'ED25519 DNSKEYs published before signing hidden');
      if (!published.has(13) && signing.has(13)) order.add('13 signs withdrawn');
      checks++;
      const phase = statusOf('algo')?.dnssec?.rollover?.phase;
      if (phase && phases.at(-1) !== phase) phases.push(phase);
      const algs = new Set((await keysOf(origin)).map((k) => k.algorithm));
      const ds = await dsAt(origin);
      return phases.length > 0 &&
        algs.size === 1 &&
        algs.has(15) &&
        ds.length > 0 &&
        ds.every((d) => d.split(' ')[1] === '15') &&
        statusOf('algo')?.dnssec?.rollover?.kind === 'ZSK'
        ? true
        : undefined;
    }, 90_000);
    for (const phase of ['Sign', 'Publish', 'Unpublish'])
      assert.ok(phases.includes(phase), `phase ${phase} seen (seen: ${phases.join(' → ')})`);
    assert.ok(checks >= 5, `validated ${checks} times across the rollover`);
    assert.ok(order.has('13 signs withdrawn'), 'the old signatures outlived the old DNSKEYs');
    // CDS (RFC 7344) names the new key only, as the status DS does.
    const cds = rdataOf(await dig(pdns.dnsPort, origin, 'CDS'), 'CDS').map((d) => {
      const [tag, alg, type, ...digest] = d.toLowerCase().split(/\s+/);
      return `${tag} ${alg} ${type} ${digest.join('')}`;
    });
    assert.deepEqual(cds, statusOf('algo')!.dnssec!.ds);
    const keys = statusOf('algo')!.dnssec!.keys!;
    assert.deepEqual(keys.map((k) => [k.role, k.algorithm]).sort(), [
      ['KSK', 15],
      ['ZSK', 15],
    ]);
  });

  test('a parent Zonekeeper cannot see: the rollover waits in DsChange naming the DS, and goes on once recorded', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const origin = 'alone.example.';
    store.apply(
      zone('dns', 'alone', 'alone.example', { className: 'powerdns', ...FAST, dnssec: { enabled: true } }),
    );
    store.apply(www('alone', '192.0.2.31'));
    const { value: oldDs } = await waitFor(async () => {
      const ds = statusOf('alone')?.dnssec?.ds;
      return ds && ds.length > 0 ? ds : undefined;
    }, 30_000);
    // The simulated parent (a registrar) holds the old DS: delv trusts exactly what it holds.
    let parentHolds = [...oldDs];
    const validate = async () => {
      const anchors = await dsTrustAnchorFile(dir, origin, parentHolds);
      const r = await delv(pdns.dnsPort, anchors, origin, `www.${origin}`, 'A');
      assert.match(
        r.verdict,
        /^fully validated/,
        `validation failed (parent holds ${parentHolds}): ${r.raw}`,
      );
    };
    await validate();
    const z = zone('dns', 'alone', 'alone.example', {
      className: 'powerdns',
      ...FAST,
      dnssec: { enabled: true, algorithm: 'ECDSAP384SHA384' },
    });
    store.apply({ ...z, metadata: { ...z.metadata, generation: 2 } });
    const { value: waiting } = await waitFor(async () => {
      await validate();
      await signedByEvery(origin, `www.${origin}`, 'A');
      const r = statusOf('alone')?.dnssec?.rollover;
      return r?.phase === 'DsChange' ? r : undefined;
    }, 60_000);
    assert.equal(waiting.kind, 'Algorithm');
    assert.equal(waiting.reason, 'ParentDsNotVisible');
    assert.equal(waiting.nextStep, undefined, 'no step is due: it waits for the parent');
    const newDs = statusOf('alone')!.dnssec!.ds!;
    assert.ok(
      newDs.length === 1 && newDs[0]!.split(' ')[1] === '14',
      `the DS to give is the new one: ${newDs}`,
    );
    assert.ok(
      waiting.message!.includes(newDs[0]!) && waiting.message!.includes('dns.zonekeeper.dev/parent-ds'),
      waiting.message,
    );
    // A parent that reads CDS (RFC 8078) finds the new DS published while the rollover waits.
    const cds = rdataOf(await dig(pdns.dnsPort, origin, 'CDS'), 'CDS').map((d) => {
      const [tag, alg, type, ...digest] = d.toLowerCase().split(/\s+/);
      return `${tag} ${alg} ${type} ${digest.join('')}`;
    });
    assert.ok(cds.includes(newDs[0]!), `CDS ${cds} carries the new DS ${newDs[0]}`);
    // Several resyncs later it still waits, and both algorithms still sign.
    let resyncs = 0;
    await waitFor(
      async () => {
        await validate();
        await signedByEvery(origin, `www.${origin}`, 'A');
        assert.equal(statusOf('alone')?.dnssec?.rollover?.phase, 'DsChange');
        return ++resyncs >= 10 ? true : undefined;
      },
      30_000,
      300,
    );
    // The operator gives the parent the new DS, then records it.
    parentHolds = [...newDs];
    await validate();
    store.apply({
      ...z,
      metadata: {
        ...z.metadata,
        generation: 2,
        annotations: { 'dns.zonekeeper.dev/parent-ds': `${newDs[0]}; ttl=2` },
      },
    });
    const phases: string[] = [];
    await waitFor(async () => {
      await validate();
      await signedByEvery(origin, `www.${origin}`, 'A');
      const r = statusOf('alone')?.dnssec?.rollover;
      if (r && phases.at(-1) !== r.phase) phases.push(r.phase);
      const algs = new Set((await keysOf(origin)).map((k) => k.algorithm));
      return r === undefined && algs.size === 1 && algs.has(14) ? true : undefined;
    }, 60_000);
    assert.ok(phases.includes('Unpublish'), `went on through Unpublish (seen: ${phases.join(' → ')})`);
    assert.deepEqual(
      statusOf('alone')!.dnssec!.keys!.map((k) => [k.role, k.algorithm]),
      [['CSK', 14]],
    );
  });

  test('KSK rollover (double-KSK) under a managed parent: the DS moves, delv validates from the parent key throughout', async (t) => {
    if (unavailable) return t.skip(unavailable);
    const origin = 'ksk.parent.example.';
    store.apply(
      childZone('ksk', 'ksk.parent.example', {
        enabled: true,
        keys: 'Split',
        kskLifetimeSeconds: 8,
        zskLifetimeSeconds: 0,
      }),
    );
    store.apply(www('ksk', '192.0.2.41'));
    const ksks = async () => (await keysOf(origin)).filter((k) => k.flags === 257);
    const { value: first } = await waitFor(async () => {
      const ds = statusOf('ksk')?.dnssec?.ds ?? [];
      const held = await dsAt(origin);
      const k = await ksks();
      return ds.length > 0 && ds.every((d) => held.includes(d)) && k.length === 1 ? k[0] : undefined;
    }, 30_000);
    const anchors = await trustAnchorFile(dir, pdns.dnsPort, 'parent.example.');
    const unbound = await resolverFor('ksk.parent.example');
    const phases: string[] = [];
    let twoKsks = false;
    await waitFor(async () => {
      const r = await delv(pdns.dnsPort, anchors, 'parent.example.', `www.${origin}`, 'A');
      assert.match(r.verdict, /^fully validated/, `validation failed during the KSK rollover: ${r.raw}`);
      await unbound?.(`www.${origin}`, 'A');
      const phase = statusOf('ksk')?.dnssec?.rollover?.phase;
      if (phase && phases.at(-1) !== phase) phases.push(phase);
      const now = await ksks();
      if (now.length === 2) twoKsks = true;
      return now.length === 1 &&
        Buffer.compare(Buffer.from(now[0]!.publicKey), Buffer.from(first.publicKey)) !== 0
        ? true
        : undefined;
    }, 90_000);
    assert.ok(twoKsks, 'both KSKs were published together (double-KSK)');
    for (const phase of ['Publish', 'DsPropagate'])
      assert.ok(phases.includes(phase), `phase ${phase} seen (seen: ${phases.join(' → ')})`);
    const ds = await dsAt(origin);
    assert.deepEqual(ds, statusOf('ksk')!.dnssec!.ds, "the parent holds the new KSK's DS only");
  });
});
