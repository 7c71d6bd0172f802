/**
 * A `serve` whose --state-dir is empty (new, or the old one lost) starts each zone's serial above the
 * serial its secondaries hold, so they keep following: a real Knot secondary follows a first `serve`
 * through a few changes, then a second `serve` starts on the same manifests with an empty state.
 *
 *   npx node --test test/empty-state-serials.test.ts     # about 10 s
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { Rdata } from '../src/dns/rdata.ts';
import { RRType } from '../src/dns/rrtype.ts';
import { buildQuery, exchange } from './support/dns-client.ts';
import { freePorts, type Secondary, startSecondary, type TsigKeyConfig } from './support/secondaries.ts';
import { axfr, knotZone, zoneVersion } from './support/zone-content.ts';
import {
  CLI,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);
const ZONE = 'example.com.';
const KEY: TsigKeyConfig = {
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: randomBytes(32).toString('base64'),
};

function manifests(keyFile: string, notifyPort: number, www: string): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com.]
  defaults: { ttl: 300, soa: { refresh: 3600, retry: 600 } }   # only NOTIFY explains a quick update
  transfers:
    allowFrom: [127.0.0.1/32]
    requireTsig: false
    tsigKeys:
      - { name: ${KEY.name}, algorithm: ${KEY.algorithm}, secretRef: { file: ${JSON.stringify(keyFile)} } }
    notify: [{ address: "127.0.0.1:${notifyPort}", tsigKey: ${KEY.name} }]
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec: { domainName: example.com, className: builtin }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ns1, namespace: dns }
spec: { zoneRef: { name: example-com }, name: ns1, type: A, records: ["192.0.2.53"] }
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: www, namespace: dns }
spec: { zoneRef: { name: example-com }, name: www, type: A, records: ["${www}"] }
`;
}

async function soaSerial(port: number): Promise<number | undefined> {
  const reply = await exchange(port, buildQuery({ name: ZONE, type: RRType.SOA }));
  const soa = reply.message?.answers.find((rr) => rr.type === RRType.SOA);
  return soa ? (soa.data as Extract<Rdata, { type: 'SOA' }>).serial : undefined;
}

describe('an empty --state-dir starts above the serial the secondaries hold', { timeout: 120_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  });

  test('Knot keeps following a serve that lost its state', async () => {
    const dir = await tempDir('manifests');
    const firstState = await tempDir('state');
    const emptyState = await tempDir('state');
    const secrets = await tempDir('secrets');
    cleanup.push(() => removeAll(dir, firstState, emptyState, secrets));
    const keyFile = path.join(secrets, 'tsig.key');
    await writeFile(keyFile, `${KEY.secret}\n`);
    const [dnsPort, knotPort] = await freePorts(2);
    const file = path.join(dir, 'zone.yaml');
    await writeFile(file, manifests(keyFile, knotPort!, '192.0.2.1'));
    const dns = ['--dns', `127.0.0.1:${dnsPort}`];

    let serve: ServeProcess = await startServe(dir, firstState, dns);
    cleanup.push(() => serve.stop());
    const knot: Secondary = await startSecondary({
      kind: 'knot',
      zone: ZONE,
      primaryPort: dnsPort!,
      key: KEY,
      port: knotPort!,
    });
    cleanup.push(() => knot.close());
    // A few changes: the serial climbs above today's date serial, and Knot follows each.
    let serial = (await soaSerial(dnsPort!))!;
    for (let i = 2; i <= 4; i++) {
      await writeFile(file, manifests(keyFile, knotPort!, `192.0.2.${i}`));
      const before = serial;
      ({ value: serial } = await waitFor(async () => {
        const s = await soaSerial(dnsPort!);
        return s !== undefined && s !== before ? s : undefined;
      }));
    }
    await waitFor(async () => ((await knot.soaSerial()) === serial ? true : undefined));
    await serve.stop();

    // The state is gone; the manifests change while serve is down. zone export, asking Knot as serve
    // will, shows the serial serve then starts at.
    await writeFile(file, manifests(keyFile, knotPort!, '192.0.2.99'));
    const exported = await run(process.execPath, [
      CLI,
      'zone',
      'export',
      '--manifests',
      dir,
      '--state-dir',
      emptyState,
      '--zone',
      ZONE,
    ]);
    const exportedVersion = zoneVersion(exported.stdout.split('\n'));
    assert.ok(
      exportedVersion && exportedVersion.serial > serial,
      `zone export: ${exported.stdout}${exported.stderr}`,
    );
    assert.match(exported.stderr, new RegExp(`no serial stored .*127\\.0\\.0\\.1:${knotPort}: ${serial}`));
    serve = await startServe(dir, emptyState, dns);
    const restarted = (await soaSerial(dnsPort!))!;
    assert.ok(
      restarted > serial,
      `serve started at ${restarted}, not above the ${serial} Knot holds:\n${serve.log()}`,
    );
    assert.match(serve.log(), /is empty/, 'the empty state is reported');
    assert.match(serve.log(), new RegExp(`secondaries serve up to ${serial}`));
    // Knot sees a higher serial (NOTIFY) and transfers the new content.
    await waitFor(async () => ((await knot.soaSerial()) === restarted ? true : undefined), 15_000).catch(
      (e: Error) => assert.fail(`Knot did not follow to ${restarted}: ${e.message}\n${knot.lastRunLog()}`),
    );
    const served = await axfr(dnsPort!, ZONE);
    assert.deepEqual(await knotZone(knot, ZONE), served);
    assert.deepEqual(exportedVersion, served, 'zone export showed the serial and content serve serves');
    assert.deepEqual(await knot.answer(`www.${ZONE}`, 'A'), ['192.0.2.99']);
  });
});
