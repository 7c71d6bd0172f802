/**
 * Key rollovers of the built-in signer, through `zonekeeper serve` on compressed time (a zone TTL of
 * 2 s, data RRsets of 6 s, an SOA refresh of 1 s, a ZSK lifetime of 8 s):
 *
 * - a ZSK rollover by pre-publication (keys: Split) of roll.test, trusted through its KSK;
 * - an algorithm rollover (ECDSAP256SHA256 → ED25519, keys: Split) of alg.parent.test, a child of a
 *   signed parent served by the same process, trusted through the parent's key only: the parent's DS
 *   follows the child's status by itself.
 *
 * At every sample, three validators must succeed: `delv` against the server; `delv` through a caching
 * Unbound (it validates what the cache hands it: signatures made before a step beside a DNSKEY RRset
 * fetched after it — what fails when a key leaves the DNSKEY RRset before cached signatures of it
 * expired); and that Unbound itself (the AD bit; it holds DNSKEY RRsets in its cache, which fails when a
 * key signs before the cached DNSKEY RRsets know it). Nothing leaves 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { delv, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf } from './support/dig.ts';
import { startUnbound, type UnboundProcess, unboundAvailable } from './support/unbound.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const FAST = 'ttl: 2\n  soa: { refresh: 1, minimum: 2 }';

function manifests(algAlgorithm: 'ECDSAP256SHA256' | 'ED25519'): string {
  const docs = [
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.parent.test.]
  defaults:
    ttl: 2
    soa: { rname: hostmaster@parent.test }`,
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: roll, namespace: dns }
spec:
  domainName: roll.test
  className: builtin
  ${FAST}
  dnssec: { enabled: true, keys: Split, zskLifetimeSeconds: 8 }`,
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: parent, namespace: dns }
spec:
  domainName: parent.test
  className: builtin
  ${FAST}
  dnssec: { enabled: true }`,
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: alg, namespace: dns }
spec:
  domainName: alg.parent.test
  className: builtin
  ${FAST}
  dnssec: { enabled: true, keys: Split, algorithm: ${algAlgorithm}, zskLifetimeSeconds: 0 }`,
  ];
  for (const [zone, name, owner, type, records, ttl] of [
    ['roll', 'www', 'www', 'A', ['192.0.2.1'], 6],
    ['roll', 'txt', 'info', 'TXT', ['"rolling"'], 6],
    ['parent', 'ns1', 'ns1', 'A', ['192.0.2.53'], 2],
    ['alg', 'www', 'www', 'A', ['192.0.2.2'], 6],
    ['alg', 'txt', 'info', 'TXT', ['"rolling"'], 6],
  ] as const)
    docs.push(`apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${zone}-${name}, namespace: dns }
spec:
  zoneRef: { name: ${zone} }
  name: ${owner}
  type: ${type}
  ttl: ${ttl}
  records: ${JSON.stringify(records)}`);
  return `${docs.join('\n---\n')}\n`;
}

/** The rollover rows of /metrics: zone → `kind/phase`. */
async function phases(httpUrl: string): Promise<Map<string, string>> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('zonekeeper_dnssec_rollover_phase{') || !line.endsWith(' 1')) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1];
    out.set(label('zone')!, `${label('kind')}/${label('phase')}`);
  }
  return out;
}

/** The zone's DNSKEYs as `flags algorithm tag-less key` lines. */
async function dnskeys(port: number, zone: string): Promise<string[]> {
  return rdataOf(await dig(port, zone, 'DNSKEY'), 'DNSKEY').sort();
}

describe('DNSSEC rollovers of the built-in signer through zonekeeper serve (compressed time)', async () => {
  const noUnbound = await unboundAvailable();
  let manifestDir: string;
  let stateDir: string;
  let work: string;
  let serve: ServeProcess | undefined;
  let unbound: UnboundProcess | undefined;

  before(async () => {
    if (noUnbound) return;
    manifestDir = await tempDir('rollover-serve-manifests');
    stateDir = await tempDir('rollover-serve-state');
    work = await tempDir('rollover-serve-work');
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests('ECDSAP256SHA256'));
    serve = await startServe(manifestDir, stateDir);
    const port = serve.dnsPort;
    for (const zone of ['roll.test', 'parent.test', 'alg.parent.test'])
      await waitFor(async () => ((await dnskeys(port, zone)).length > 0 ? true : undefined), 20_000);
    // The child's DS in its parent (from the child's status), before anything trusts the parent.
    await waitFor(
      async () => (rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS').length > 0 ? true : undefined),
      20_000,
    );
    const anchors = [];
    for (const zone of ['roll.test', 'parent.test'])
      for (const k of (await dnskeys(port, zone)).filter((k) => k.startsWith('257 ')))
        anchors.push(`${zone}. DNSKEY ${k}`);
    unbound = await startUnbound({
      stubs: ['roll.test', 'parent.test', 'alg.parent.test'].map((zone) => ({ zone, port })),
      trustAnchors: anchors,
      // Unbound answers the special-use .test itself (RFC 6761) unless told not to.
      extra: ['local-zone: "test." nodefault'],
    });
  });
  after(async () => {
    await unbound?.stop();
    await serve?.stop();
    if (manifestDir) await removeAll(manifestDir, stateDir, work);
  });

  /**
   * Validates `name type` three ways (see the module comment); returns the failures, if any. `anchor`:
   * delv's trust anchor file, `root`: the zone it is for.
   */
  const sample = async (anchor: string, root: string, name: string, type: string): Promise<string[]> => {
    const failures: string[] = [];
    const direct = await delv(serve!.dnsPort, anchor, root, name, type);
    if (!/fully validated/.test(direct.verdict)) failures.push(`delv ${name} ${type}: ${direct.raw}`);
    const cached = await delv(unbound!.port, anchor, root, name, type);
    if (!/fully validated/.test(cached.verdict))
      failures.push(`delv through the cache ${name} ${type}: ${cached.raw}`);
    const r = await unbound!.query(name, type);
    if (r.status === 'SERVFAIL' || !unbound!.validated(r))
      failures.push(`Unbound ${name} ${type}: ${r.raw}\n${unbound!.log().split('\n').slice(-20).join('\n')}`);
    return failures;
  };

  test('a ZSK rollover by pre-publication: every sample validates, the ZSK is replaced', {
    skip: noUnbound,
  }, async (t) => {
    const port = serve!.dnsPort;
    const anchor = await trustAnchorFile(work, port, 'roll.test');
    const before = (await dnskeys(port, 'roll.test')).filter((k) => k.startsWith('256 '));
    assert.equal(before.length, 1, 'one ZSK before the rollover');
    const seen: string[] = [];
    const deadline = Date.now() + 120_000;
    let samples = 0;
    for (;;) {
      const phase = (await phases(serve!.httpUrl)).get('dns/roll') ?? 'none';
      if (seen.at(-1) !== phase) seen.push(phase);
      for (const [name, type] of [
        ['www.roll.test', 'A'],
        ['info.roll.test', 'TXT'],
        ['roll.test', 'DNSKEY'],
      ] as const) {
        const failures = await sample(anchor, 'roll.test', name, type);
        assert.deepEqual(
          failures,
          [],
          `validation failed during the ZSK rollover (phases ${seen.join(' → ')})`,
        );
      }
      samples++;
      const zsks = (await dnskeys(port, 'roll.test')).filter((k) => k.startsWith('256 '));
      if (seen.includes('ZSK/Retire') && phase === 'ZSK/Active' && zsks.length === 1) {
        assert.notDeepEqual(zsks, before, 'the ZSK was replaced');
        break;
      }
      assert.ok(Date.now() < deadline, `the ZSK rollover did not finish: phases ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    t.diagnostic(`phases ${seen.join(' → ')}; ${samples} samples, each validated three ways`);
    assert.ok(seen.includes('ZSK/Publish'), `phases ${seen.join(' → ')}`);
    // CDS/CDNSKEY name the KSK, which a ZSK rollover leaves alone (RFC 7344 §4).
    const cds = rdataOf(await dig(port, 'roll.test', 'CDS'), 'CDS');
    assert.equal(cds.length, 1, 'one CDS');
    assert.equal(rdataOf(await dig(port, 'roll.test', 'CDNSKEY'), 'CDNSKEY').length, 1, 'one CDNSKEY');
  });

  test('an algorithm rollover under a managed parent: every sample validates from the parent key', {
    skip: noUnbound,
  }, async (t) => {
    const port = serve!.dnsPort;
    const anchor = await trustAnchorFile(work, port, 'parent.test');
    const algorithms = async () =>
      new Set((await dnskeys(port, 'alg.parent.test')).map((k) => Number(k.split(/\s+/)[2])));
    assert.deepEqual([...(await algorithms())], [13]);
    const dsBefore = rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS');
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests('ED25519'));
    const seen: string[] = [];
    const deadline = Date.now() + 180_000;
    let samples = 0;
    for (;;) {
      const phase = (await phases(serve!.httpUrl)).get('dns/alg') ?? 'none';
      if (seen.at(-1) !== phase) seen.push(phase);
      for (const [name, type] of [
        ['www.alg.parent.test', 'A'],
        ['info.alg.parent.test', 'TXT'],
        ['alg.parent.test', 'DNSKEY'],
      ] as const) {
        const failures = await sample(anchor, 'parent.test', name, type);
        assert.deepEqual(
          failures,
          [],
          `validation failed during the algorithm rollover (phases ${seen.join(' → ')})`,
        );
      }
      samples++;
      const held = await algorithms();
      if (seen.includes('Algorithm/Unpublish') && phase === 'none' && held.size === 1 && held.has(15)) break;
      assert.ok(Date.now() < deadline, `the algorithm rollover did not finish: phases ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    t.diagnostic(`phases ${seen.join(' → ')}; ${samples} samples, each validated three ways`);
    for (const p of ['Sign', 'Publish', 'DsPropagate', 'Unpublish'])
      assert.ok(seen.includes(`Algorithm/${p}`), `phase ${p} in ${seen.join(' → ')}`);
    // The parent holds the new key's DS only; the child's CDS says the same.
    const dsAfter = rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS');
    assert.equal(dsAfter.length, 1);
    assert.notDeepEqual(dsAfter, dsBefore);
    assert.equal(dsAfter[0]!.split(/\s+/)[1], '15');
    const cds = rdataOf(await dig(port, 'alg.parent.test', 'CDS'), 'CDS');
    assert.deepEqual(
      cds.map((d) => d.toLowerCase().replace(/\s+/g, ' ')),
      dsAfter.map((d) => d.toLowerCase().replace(/\s+/g, ' ')),
    );
  });
});
