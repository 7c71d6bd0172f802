/**
 * Turning signing off safely (RFC 8078 §4 delete) through `zonekeeper serve`, on compressed time (a
 * zone TTL of 5 s, an SOA refresh of 1 s): off.parent.test, a signed child of a signed parent served by
 * the same process, gets `dnssec.enabled: false`.
 *
 * At every sample, `delv` through a caching Unbound that trusts only the parent's key must find the
 * child either secure (fully validated, while the parent holds a DS for it) or provably insecure (an
 * unsigned answer under a parent that proves no DS) — never bogus. That Unbound's cache is what fails
 * when the child drops its signatures while a DS for it is still cached. The zone must publish the
 * delete CDS/CDNSKEY while it waits, the parent must drop the DS by itself, and the zone must end
 * unsigned. Nothing leaves 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { delv, trustAnchorFile } from './support/delv.ts';
import { dig, rdataOf, soaSerial } from './support/dig.ts';
import { rolloverPhases, startSignedServe, stopSignedServe } from './support/dnssec-serve.ts';
import { type UnboundProcess, unboundAvailable } from './support/unbound.ts';
import { builtinClass, dnsZone, recordSet } from './support/zone-manifests.ts';
import { type ServeProcess, startServe, waitFor } from './support/zonekeeper-process.ts';

const FAST = 'ttl: 5\n  soa: { refresh: 1, minimum: 5 }';

function manifests(
  childSigned: boolean,
  solo: { signed: boolean; parentDs?: string } = { signed: true },
): string {
  const docs = [
    builtinClass({ nameServers: 'ns1.parent.test.', ttl: 2, rname: 'hostmaster@parent.test' }),
    dnsZone({ name: 'parent', domainName: 'parent.test', spec: [FAST, 'dnssec: { enabled: true }'] }),
    dnsZone({
      name: 'off',
      domainName: 'off.parent.test',
      spec: [FAST, `dnssec: { enabled: ${childSigned} }`],
    }),
    // A zone whose parent this server does not serve (a registrar's): the operator records the DS gone.
    dnsZone({
      name: 'solo',
      domainName: 'solo.test',
      spec: [FAST, `dnssec: { enabled: ${solo.signed} }`],
      blockMetadata: true,
      ...(solo.parentDs !== undefined && {
        annotations: `{ dns.zonekeeper.dev/parent-ds: '${solo.parentDs}' }`,
      }),
    }),
  ];
  for (const [zone, name, owner, type, records, ttl] of [
    ['parent', 'ns1', 'ns1', 'A', ['192.0.2.53'], 2],
    ['off', 'www', 'www', 'A', ['192.0.2.7'], 6],
    ['solo', 'www', 'www', 'A', ['192.0.2.8'], 6],
  ] as const)
    docs.push(recordSet({ zone, name, owner, type, records, ttl }));
  return `${docs.join('\n---\n')}\n`;
}

/** The rollover waiting rows of /metrics: zone → reason. */
async function waiting(httpUrl: string): Promise<Map<string, string>> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('zonekeeper_dnssec_rollover_waiting_parent{') || !line.endsWith(' 1')) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1];
    out.set(label('zone')!, label('reason')!);
  }
  return out;
}

describe('turning DNSSEC off under a managed parent through zonekeeper serve (RFC 8078 §4)', async () => {
  const noUnbound = await unboundAvailable();
  let manifestDir: string;
  let stateDir: string;
  let work: string;
  let serve: ServeProcess | undefined;
  let unbound: UnboundProcess | undefined;

  before(async () => {
    if (noUnbound) return;
    ({ manifestDir, stateDir, work, serve, unbound } = await startSignedServe(
      'disable-serve',
      manifests(true),
      {
        zones: ['parent.test', 'off.parent.test'],
        child: 'off.parent.test',
        anchorZones: ['parent.test'],
      },
    ));
  });
  after(() => stopSignedServe({ manifestDir, stateDir, work, serve, unbound }));

  test('the child stays signed with the delete CDS until the DS is gone and expired, then goes insecure', {
    skip: noUnbound,
  }, async (t) => {
    const port = serve!.dnsPort;
    const anchor = await trustAnchorFile(work, port, 'parent.test');
    // Secure to start with, and the cache holds the DS.
    const first = await delv(unbound!.port, anchor, 'parent.test', 'www.off.parent.test', 'A');
    assert.match(first.verdict, /^fully validated/, first.raw);
    await writeFile(path.join(manifestDir, 'zones.yaml'), manifests(false));
    const seen: string[] = [];
    let sawDelete = false;
    let deletePairs = 0;
    let secureSamples = 0;
    let insecureSamples = 0;
    let dsGoneAt: number | undefined;
    let samples = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const phase = (await rolloverPhases(serve!.httpUrl)).get('dns/off') ?? 'none';
      if (seen.at(-1) !== phase) seen.push(phase);
      // A name never asked before as well: its answer comes from the server now, beside the DS the
      // cache holds (cached answers alone could hide a zone that dropped its signatures too early).
      const fresh = `n${samples++}.off.parent.test`;
      // The child's serial around the sample: CDS and CDNSKEY are two queries, and a sample that
      // straddles the change to Unsigned sees the delete CDS at one serial and no CDNSKEY at the next.
      const serialBefore = await soaSerial(port, 'off.parent.test');
      const [viaCache, viaCacheFresh, ds, cds, cdnskey, dnskey] = await Promise.all([
        delv(unbound!.port, anchor, 'parent.test', 'www.off.parent.test', 'A'),
        delv(unbound!.port, anchor, 'parent.test', fresh, 'A'),
        dig(port, 'off.parent.test', 'DS'),
        dig(port, 'off.parent.test', 'CDS', { args: ['+dnssec'] }),
        dig(port, 'off.parent.test', 'CDNSKEY'),
        dig(port, 'off.parent.test', 'DNSKEY'),
      ]);
      const verdict = viaCache.verdict;
      if (/^fully validated/.test(verdict)) secureSamples++;
      else if (/^unsigned answer/.test(verdict)) insecureSamples++;
      else assert.fail(`bogus through the cache (phases ${seen.join(' → ')}): ${viaCache.raw}`);
      // delv's verdict on a name that does not exist is its first "; " line ("; negative response,
      // fully validated" or "; negative response, unsigned answer"); a bogus answer has none.
      if (!/^; (negative response, )?(fully validated|unsigned answer)/m.test(viaCacheFresh.raw))
        assert.fail(
          `bogus through the cache for ${fresh} (phases ${seen.join(' → ')}): ${viaCacheFresh.raw}`,
        );
      if (rdataOf(ds, 'DS').length === 0) dsGoneAt ??= Date.now();
      const cdsNow = rdataOf(cds, 'CDS');
      const oneSerial = serialBefore === (await soaSerial(port, 'off.parent.test'));
      const deleteCds = cdsNow.length > 0 && cdsNow.every((c) => c.replace(/\s+/g, ' ') === '0 0 0 00');
      if (deleteCds) sawDelete = true;
      if (deleteCds && oneSerial) {
        deletePairs++;
        assert.deepEqual(
          rdataOf(cdnskey, 'CDNSKEY'),
          ['0 3 0 AA=='],
          'the delete CDNSKEY beside the delete CDS',
        );
        assert.ok(rdataOf(cds, 'RRSIG').length > 0, 'the delete CDS is signed');
      }
      if (
        rdataOf(dnskey, 'DNSKEY').length === 0 &&
        /^unsigned answer/.test(verdict) &&
        seen.at(-1) === 'none'
      )
        break;
      assert.ok(Date.now() < deadline, `the zone did not go insecure: phases ${seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    t.diagnostic(
      `phases ${seen.join(' → ')}; ${secureSamples} secure and ${insecureSamples} insecure samples through the cache`,
    );
    assert.ok(sawDelete, `the delete CDS/CDNSKEY was published (phases ${seen.join(' → ')})`);
    assert.ok(deletePairs > 0, 'the delete CDS and CDNSKEY were compared at one serial at least once');
    assert.ok(dsGoneAt !== undefined, 'the parent dropped the DS by itself');
    assert.ok(seen.includes('Disable/DsPropagate'), `phases ${seen.join(' → ')}`);
    // Unsigned now: no CDS, no signatures.
    assert.deepEqual(rdataOf(await dig(port, 'off.parent.test', 'CDS'), 'CDS'), []);
    const a = await dig(port, 'www.off.parent.test', 'A', { args: ['+dnssec'] });
    assert.deepEqual(rdataOf(a, 'RRSIG'), []);
    // The keys are removed once the zone is served unsigned (the parent's stay).
    const keysOf = async (zone: string) =>
      (
        JSON.parse(await readFile(path.join(stateDir, 'dnssec', `${zone}.json`), 'utf8')) as {
          keys: unknown[];
        }
      ).keys.length;
    await waitFor(async () => ((await keysOf('off.parent.test')) === 0 ? true : undefined), 10_000);
    assert.ok((await keysOf('parent.test')) > 0);
  });
  test('a parent not served here: waits in Disabling across a restart until the removal is recorded', {
    skip: noUnbound,
  }, async (t) => {
    const file = path.join(manifestDir, 'zones.yaml');
    const signed = async (port: number) =>
      rdataOf(await dig(port, 'www.solo.test', 'A', { args: ['+dnssec'] }), 'RRSIG').length > 0;
    const deleteCds = async (port: number) =>
      rdataOf(await dig(port, 'solo.test', 'CDS'), 'CDS').map((c) => c.replace(/\s+/g, ' '));
    assert.ok(await signed(serve!.dnsPort), 'solo.test is signed to start with');
    await writeFile(file, manifests(false, { signed: false }));
    await waitFor(
      async () =>
        (await rolloverPhases(serve!.httpUrl)).get('dns/solo') === 'Disable/Disabling' ? true : undefined,
      20_000,
    );
    assert.equal((await waiting(serve!.httpUrl)).get('dns/solo'), 'ParentDsNotRemoved');
    // Nothing says the parent dropped the DS: it stays signed, asking for the delete, however long.
    await new Promise((r) => setTimeout(r, 4000));
    assert.ok(await signed(serve!.dnsPort), 'still signed while the parent may hold the DS');
    assert.deepEqual(await deleteCds(serve!.dnsPort), ['0 0 0 00']);
    // A restart (statuses are not kept by serve): still signed, still asking.
    await serve!.stop();
    serve = await startServe(manifestDir, stateDir);
    await waitFor(
      async () =>
        rdataOf(await dig(serve!.dnsPort, 'solo.test', 'SOA'), 'SOA').length > 0 ? true : undefined,
      20_000,
    );
    assert.ok(await signed(serve!.dnsPort), 'still signed after a restart');
    assert.deepEqual(await deleteCds(serve!.dnsPort), ['0 0 0 00']);
    await waitFor(
      async () =>
        (await rolloverPhases(serve!.httpUrl)).get('dns/solo') === 'Disable/Disabling' ? true : undefined,
      20_000,
    );
    // The operator records the parent's DS gone, with its TTL: DsPropagate, then unsigned.
    await writeFile(file, manifests(false, { signed: false, parentDs: 'none; ttl=2' }));
    const seen: string[] = [];
    await waitFor(async () => {
      const phase = (await rolloverPhases(serve!.httpUrl)).get('dns/solo') ?? 'none';
      if (seen.at(-1) !== phase) seen.push(phase);
      return phase === 'none' && !(await signed(serve!.dnsPort)) ? true : undefined;
    }, 30_000);
    t.diagnostic(`phases after the record: ${seen.join(' → ')}`);
    assert.deepEqual(await deleteCds(serve!.dnsPort), []);
  });
});
