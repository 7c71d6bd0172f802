/**
 * Key rollovers of the built-in signer, through `zonekeeper serve` on compressed time (a zone TTL of
 * 5 s, data RRsets of 6 s, an SOA refresh of 1 s, a ZSK lifetime of 8 s):
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
 * key signs before the cached DNSKEY RRsets know it). Whether a real cache happens to hold the one
 * RRset that would fail depends on when it fetched it, so beside them a cache is modelled at every
 * sample (`modelCache`): every answer and every DNSKEY RRset seen stays "cached" for its TTL, and each
 * must keep validating against what is served. Removing the old ZSK early (Iret = 0) or letting the new
 * one sign early (Ipub = 0) fails it at once. Nothing leaves 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dnskeyRdata, keyTag, parseDnskey } from '../src/dns/dnssec/keys.ts';
import { delv, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf } from './support/dig.ts';
import { rolloverPhases, startSignedServe, stopSignedServe } from './support/dnssec-serve.ts';
import { type UnboundProcess, unboundAvailable } from './support/unbound.ts';
import { builtinClass, dnsZone, recordSet } from './support/zone-manifests.ts';
import type { ServeProcess } from './support/zonekeeper-process.ts';

const run = promisify(execFile);

const FAST = 'ttl: 5\n  soa: { refresh: 1, minimum: 5 }';

function manifests(algAlgorithm: 'ECDSAP256SHA256' | 'ED25519', algKeys: 'Split' | 'CSK' = 'Split'): string {
  const docs = [
    builtinClass({
      nameServers: 'ns1.parent.test.',
      ttl: 2,
      rname: 'hostmaster@parent.test',
      extra: '\n  transfers:\n    allowFrom: [127.0.0.1/32]',
    }),
    dnsZone({
      name: 'roll',
      domainName: 'roll.test',
      spec: [FAST, 'dnssec: { enabled: true, keys: Split, zskLifetimeSeconds: 8 }'],
    }),
    dnsZone({ name: 'parent', domainName: 'parent.test', spec: [FAST, 'dnssec: { enabled: true }'] }),
    dnsZone({
      name: 'alg',
      domainName: 'alg.parent.test',
      spec: [
        FAST,
        `dnssec: { enabled: true, keys: ${algKeys}, algorithm: ${algAlgorithm}, zskLifetimeSeconds: 0 }`,
      ],
    }),
  ];
  for (const [zone, name, owner, type, records, ttl] of [
    ['roll', 'www', 'www', 'A', ['192.0.2.1'], 6],
    ['roll', 'txt', 'info', 'TXT', ['"rolling"'], 6],
    ['parent', 'ns1', 'ns1', 'A', ['192.0.2.53'], 2],
    ['alg', 'www', 'www', 'A', ['192.0.2.2'], 6],
    ['alg', 'txt', 'info', 'TXT', ['"rolling"'], 6],
  ] as const)
    docs.push(recordSet({ zone, name, owner, type, records, ttl }));
  return `${docs.join('\n---\n')}\n`;
}

const ROLL_NAMES = [
  ['www.roll.test', 'A'],
  ['info.roll.test', 'TXT'],
] as const;
const ALG_NAMES = [
  ['www.alg.parent.test', 'A'],
  ['info.alg.parent.test', 'TXT'],
] as const;

/** The zone's AXFR checked by `kzonecheck --dnssec on` (every RRset validly signed, the chain whole). */
async function checkAxfr(port: number, zone: string, dir: string, label: string): Promise<void> {
  const { stdout } = await run(
    'dig',
    ['@127.0.0.1', '-p', String(port), `${zone}.`, 'AXFR', '+nocmd', '+nostats', '+nocomments'],
    { timeout: 20_000, maxBuffer: 16 << 20 },
  );
  // A transfer refused would leave nothing to check: the signed zone with its CDS is there.
  assert.match(stdout, /\sRRSIG\s/, `AXFR of ${zone}: ${stdout}`);
  assert.match(stdout, /\sCDS\s/, `AXFR of ${zone}: ${stdout}`);
  const file = path.join(dir, `${zone}.${label.replace(/\W/g, '-')}.axfr`);
  await writeFile(file, stdout);
  await run('kzonecheck', ['--dnssec', 'on', '-o', `${zone}.`, file]).catch((e: { stdout?: string }) => {
    throw new Error(`kzonecheck refused the AXFR of ${zone} in ${label}: ${e.stdout ?? e}`);
  });
}

/** An answer or a DNSKEY RRset as a cache holds it: until when, and the key tags involved. */
interface Held {
  until: number;
  tags: Set<number>;
  what: string;
}

/**
 * A cache modelled at every sample, beside the real one: every answer fetched stays "cached" for its
 * TTL, and so does every DNSKEY RRset. At each sample, every answer still cached must carry a signature
 * by a key of the DNSKEY RRset served now (a key removed too early fails this: RFC 7583 §3.2, Iret), and
 * every answer served now must carry a signature by a key of every DNSKEY RRset still cached (a key
 * signing too early fails this: Ipub). One second of slack for the sampling.
 */
async function modelCache(
  port: number,
  zone: string,
  names: readonly (readonly [string, string])[],
  cache: { answers: Held[]; dnskeys: Held[] },
): Promise<string[]> {
  const failures: string[] = [];
  const now = Date.now();
  const live = (h: Held) => h.until - 1000 > now;
  const dk = await dig(port, zone, 'DNSKEY', { args: ['+dnssec'] });
  const served = new Set(rdataOf(dk, 'DNSKEY').map((k) => keyTag(dnskeyRdata(parseDnskey(k)))));
  const ttlOf = (r: { answer: string[] }, type: string) =>
    Number(r.answer.find((l) => l.split(' ')[3] === type)?.split(' ')[1] ?? 0);
  for (const held of cache.answers.filter(live))
    if (![...held.tags].some((t) => served.has(t)))
      failures.push(
        `${held.what}, still cached, is signed by ${[...held.tags]} only; the DNSKEY RRset now holds ${[...served]}`,
      );
  for (const [name, type] of names) {
    const r = await dig(port, name, type, { args: ['+dnssec'] });
    const tags = new Set(
      rdataOf(r, 'RRSIG')
        .map((sig) => sig.split(' '))
        .filter((f) => f[0] === type)
        .map((f) => Number(f[6])),
    );
    for (const held of cache.dnskeys.filter(live))
      if (![...tags].some((t) => held.tags.has(t)))
        failures.push(
          `${name} ${type} is signed by ${[...tags]} only, unknown to ${held.what}, still cached`,
        );
    cache.answers.push({
      until: now + ttlOf(r, type) * 1000,
      tags,
      what: `${name} ${type} of ${new Date(now).toISOString()}`,
    });
  }
  cache.dnskeys.push({
    until: now + ttlOf(dk, 'DNSKEY') * 1000,
    tags: served,
    what: `the DNSKEY RRset of ${new Date(now).toISOString()} (${[...served]})`,
  });
  return failures;
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
    ({ manifestDir, stateDir, work, serve, unbound } = await startSignedServe(
      'rollover-serve',
      manifests('ECDSAP256SHA256'),
      {
        zones: ['roll.test', 'parent.test', 'alg.parent.test'],
        child: 'alg.parent.test',
        anchorZones: ['roll.test', 'parent.test'],
      },
    ));
  });
  after(() => stopSignedServe({ manifestDir, stateDir, work, serve, unbound }));

  /**
   * Validates `name type` three ways (see the module comment); returns the failures, if any. `anchor`:
   * delv's trust anchor file, `root`: the zone it is for.
   */
  const sample = async (anchor: string, root: string, name: string, type: string): Promise<string[]> => {
    const failures: string[] = [];
    const [direct, cached, r] = await Promise.all([
      delv(serve!.dnsPort, anchor, root, name, type),
      delv(unbound!.port, anchor, root, name, type),
      unbound!.query(name, type),
    ]);
    if (!/fully validated/.test(direct.verdict)) failures.push(`delv ${name} ${type}: ${direct.raw}`);
    if (!/fully validated/.test(cached.verdict))
      failures.push(`delv through the cache ${name} ${type}: ${cached.raw}`);
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
    let bothPublished = 0;
    const model = { answers: [] as Held[], dnskeys: [] as Held[] };
    let samples = 0;
    for (;;) {
      const phase = (await rolloverPhases(serve!.httpUrl)).get('dns/roll') ?? 'none';
      if (seen.at(-1) !== phase) {
        seen.push(phase);
        await checkAxfr(port, 'roll.test', work, phase);
      }
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
      const timing = await modelCache(port, 'roll.test', ROLL_NAMES, model);
      assert.deepEqual(timing, [], `a cache would fail during the ZSK rollover (phases ${seen.join(' → ')})`);
      samples++;
      const zsks = (await dnskeys(port, 'roll.test')).filter((k) => k.startsWith('256 '));
      if (zsks.length === 2) bothPublished++;
      if (seen.includes('ZSK/Retire') && phase === 'ZSK/Active' && zsks.length === 1) {
        assert.notDeepEqual(zsks, before, 'the ZSK was replaced');
        break;
      }
      assert.ok(Date.now() < deadline, `the ZSK rollover did not finish: phases ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    t.diagnostic(`phases ${seen.join(' → ')}; ${samples} samples, each validated three ways`);
    // Samples fell while both ZSKs were published (Publish or Retire: how many depends on the machine).
    assert.ok(bothPublished > 0, `no sample with both ZSKs published: phases ${seen.join(' → ')}`);
    assert.ok(seen.includes('ZSK/Publish') || seen.includes('ZSK/Retire'), `phases ${seen.join(' → ')}`);
    // CDS/CDNSKEY name the KSK, which a ZSK rollover leaves alone (RFC 7344 §4).
    const cds = rdataOf(await dig(port, 'roll.test', 'CDS'), 'CDS');
    assert.equal(cds.length, 1, 'one CDS');
    assert.equal(rdataOf(await dig(port, 'roll.test', 'CDNSKEY'), 'CDNSKEY').length, 1, 'one CDNSKEY');
  });

  /**
   * Rewrites the manifests to `text` and samples alg.parent.test until its rollover is over and `done`
   * holds for its DNSKEYs, validating every sample from the parent's key alone.
   */
  const rollAlg = async (text: string, done: (dnskeys: string[]) => boolean) => {
    const port = serve!.dnsPort;
    const anchor = await trustAnchorFile(work, port, 'parent.test');
    await writeFile(path.join(manifestDir, 'zones.yaml'), text);
    const seen: string[] = [];
    const deadline = Date.now() + 180_000;
    let overlapping = 0;
    const model = { answers: [] as Held[], dnskeys: [] as Held[] };
    let samples = 0;
    for (;;) {
      const phase = (await rolloverPhases(serve!.httpUrl)).get('dns/alg') ?? 'none';
      if (seen.at(-1) !== phase) {
        seen.push(phase);
        // In Sign the new keys' signatures come from keys not published yet (RFC 6781 §4.1.4),
        // which a zone checker counts as broken; every other phase is a complete signed zone.
        if (phase !== 'Algorithm/Sign') await checkAxfr(port, 'alg.parent.test', work, phase);
      }
      for (const [name, type] of [...ALG_NAMES, ['alg.parent.test', 'DNSKEY'] as const]) {
        const failures = await sample(anchor, 'parent.test', name, type);
        assert.deepEqual(failures, [], `validation failed during the rollover (phases ${seen.join(' → ')})`);
      }
      const timing = await modelCache(port, 'alg.parent.test', ALG_NAMES, model);
      assert.deepEqual(timing, [], `a cache would fail during the rollover (phases ${seen.join(' → ')})`);
      samples++;
      const held = await dnskeys(port, 'alg.parent.test');
      if (held.filter((k) => k.startsWith('257 ')).length === 2) overlapping++;
      if (seen.some((p) => p.startsWith('Algorithm/')) && phase === 'none' && done(held)) break;
      assert.ok(Date.now() < deadline, `the rollover did not finish: phases ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    // Samples fell while both key sets were published (which phases were sampled depends on the machine).
    assert.ok(overlapping > 0, `no sample with both key sets published: phases ${seen.join(' → ')}`);
    return `phases ${seen.join(' → ')}; ${samples} samples, each validated three ways and against the modelled cache`;
  };

  /** The parent's DS for alg.parent.test and the child's CDS: the same single record, of `algorithm`. */
  const dsFollowed = async (algorithm: number, before: string[]) => {
    const port = serve!.dnsPort;
    const dsAfter = rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS');
    assert.equal(dsAfter.length, 1);
    assert.notDeepEqual(dsAfter, before);
    assert.equal(dsAfter[0]!.split(/\s+/)[1], String(algorithm));
    const cds = rdataOf(await dig(port, 'alg.parent.test', 'CDS'), 'CDS');
    assert.deepEqual(
      cds.map((d) => d.toLowerCase().replace(/\s+/g, ' ')),
      dsAfter.map((d) => d.toLowerCase().replace(/\s+/g, ' ')),
    );
    return dsAfter;
  };

  test('an algorithm rollover under a managed parent: every sample validates from the parent key', {
    skip: noUnbound,
  }, async (t) => {
    const port = serve!.dnsPort;
    const algorithms = (keys: string[]) => new Set(keys.map((k) => Number(k.split(/\s+/)[2])));
    assert.deepEqual([...algorithms(await dnskeys(port, 'alg.parent.test'))], [13]);
    const dsBefore = rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS');
    t.diagnostic(
      await rollAlg(manifests('ED25519'), (keys) => {
        const held = algorithms(keys);
        return held.size === 1 && held.has(15);
      }),
    );
    // The parent holds the new key's DS only; the child's CDS says the same.
    await dsFollowed(15, dsBefore);
  });

  test('a key mode change (Split → CSK) under a managed parent rolls the same way, never replacing keys at once', {
    skip: noUnbound,
  }, async (t) => {
    const port = serve!.dnsPort;
    const before = await dnskeys(port, 'alg.parent.test');
    assert.equal(before.length, 2, 'a KSK and a ZSK before');
    const dsBefore = rdataOf(await dig(port, 'alg.parent.test', 'DS'), 'DS');
    t.diagnostic(
      await rollAlg(manifests('ED25519', 'CSK'), (keys) => keys.length === 1 && keys[0]!.startsWith('257 ')),
    );
    await dsFollowed(15, dsBefore);
  });
});
