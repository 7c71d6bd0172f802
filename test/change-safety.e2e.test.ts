/**
 * Change safety end to end with the real `zonekeeper serve` and dig: large changes are held (the zone
 * keeps answering with its previous content and serial), a confirmation applies exactly the confirmed
 * change, a small change applies at once, a deletion arriving in slices is still held, and an emptied
 * folder holds every zone and deletes nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import { type PowerDnsProcess, powerDnsAvailable, startPowerDns } from './support/powerdns.ts';
import {
  CLI,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Item {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: { serial?: number; conditions?: Condition[] };
}

const CLASS = `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: {name: builtin}
spec:
  backend: {builtin: {}}
  nameServers: [ns1.example.net., ns2.example.net.]
`;

/** A zone `name` (domain `name`.test) with record sets h1..hN (A 192.0.2.i); 1 + N RRsets with the apex NS. */
function zoneFile(name: string, hosts: number[], extra = ''): string {
  const docs = [
    `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: {name: ${name}, namespace: dns${extra ? `, annotations: {${extra}}` : ''}}
spec: {domainName: ${name}.test, className: builtin}
`,
  ];
  for (const i of hosts)
    docs.push(`apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: {name: ${name}-h${i}, namespace: dns}
spec: {zoneRef: {name: ${name}}, name: h${i}.${name}.test., type: A, records: ["192.0.2.${i}"]}
`);
  return docs.join('---\n');
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function zoneItem(serve: ServeProcess, name: string): Promise<Item | undefined> {
  const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as { items: Item[] };
  return body.items.find((i) => i.kind === 'DNSZone' && i.metadata.name === name);
}

function programmed(item: Item | undefined): Condition | undefined {
  return item?.status?.conditions?.find((c) => c.type === 'Programmed');
}

async function heldHash(
  serve: ServeProcess,
  name: string,
  not?: string,
): Promise<{ hash: string; message: string }> {
  const { value } = await waitFor(async () => {
    const c = programmed(await zoneItem(serve, name));
    if (c?.reason !== 'ChangeHeld') return undefined;
    const hash = /change ([0-9a-f]{32}) held/.exec(c.message)?.[1];
    return hash && hash !== not ? { hash, message: c.message } : undefined;
  }, 20_000);
  return value;
}

async function ready(serve: ServeProcess, name: string): Promise<Item> {
  try {
    const { value } = await waitFor(async () => {
      const item = await zoneItem(serve, name);
      const c = item?.status?.conditions?.find((x) => x.type === 'Ready');
      return c?.status === 'True' && programmed(item)?.status === 'True' ? item : undefined;
    }, 20_000);
    return value;
  } catch (e) {
    const item = await zoneItem(serve, name);
    throw new Error(
      `${name} not ready: ${JSON.stringify(item?.status?.conditions)}\n${serve.log().slice(-3000)}`,
      {
        cause: e,
      },
    );
  }
}

async function soaSerial(serve: ServeProcess, domain: string): Promise<number> {
  const [soa] = rdataOf(await dig(serve.dnsPort, domain, 'SOA'), 'SOA');
  assert.ok(soa, `no SOA for ${domain}`);
  return Number(soa.split(' ')[2]);
}

/** Which of h1..hN answer, read with dig. */
async function answering(serve: ServeProcess, name: string, hosts: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const i of hosts) {
    const a = rdataOf(await dig(serve.dnsPort, `h${i}.${name}.test`, 'A'), 'A');
    if (a.includes(`192.0.2.${i}`)) out.push(i);
  }
  return out;
}

async function confirm(state: string, zone: string, hash: string): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, 'confirm', '--state-dir', state, zone, hash]);
  return stdout;
}

/**
 * A folder with `files` beside the class (and, with `filler`, a zone of 40 record sets, so that a
 * zone's change stays far below the folder's own threshold and the zone's hold is what is tested).
 */
async function setUp(files: Record<string, string>, window: string, filler = true) {
  const manifests = await tempDir('manifests');
  const state = await tempDir('state');
  await writeFile(path.join(manifests, '00-class.yaml'), CLASS);
  if (filler) await writeFile(path.join(manifests, 'filler.yaml'), zoneFile('filler', range(1, 40)));
  for (const [file, text] of Object.entries(files)) await writeFile(path.join(manifests, file), text);
  const serve = await startServe(manifests, state, ['--change-safety-window', window]);
  return { manifests, state, serve };
}

describe('change safety (serve + dig)', () => {
  test('a deletion over the threshold is held: the zone keeps its content and serial; confirming applies exactly it, a later different change is held again', async () => {
    const { manifests, state, serve } = await setUp({ 'alpha.yaml': zoneFile('alpha', range(1, 20)) }, '30');
    const all = range(1, 20);
    try {
      await ready(serve, 'alpha');
      const serial = await soaSerial(serve, 'alpha.test');
      // 21 RRsets (apex NS + 20); deleting 7 is 33 % > 30 %.
      await writeFile(path.join(manifests, 'alpha.yaml'), zoneFile('alpha', range(8, 20)));
      const held = await heldHash(serve, 'alpha');
      assert.match(held.message, /would delete 7 and change 0 of the zone's 21 RRsets/);
      assert.match(held.message, /zonekeeper confirm --state-dir/);
      const item = await zoneItem(serve, 'alpha');
      assert.equal(item?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
      assert.deepEqual(await answering(serve, 'alpha', all), all, 'nothing deleted');
      assert.equal(await soaSerial(serve, 'alpha.test'), serial, 'the serial does not advance');
      const metrics = await (await fetch(`${serve.httpUrl}/metrics`)).text();
      assert.match(metrics, /^zonekeeper_zones_held 1$/m);
      const readyz = await fetch(`${serve.httpUrl}/readyz`);
      assert.equal(readyz.status, 503);

      // A wrong hash does nothing and says so.
      await confirm(state, 'dns/alpha', '0123456789abcdef0123456789abcdef');
      await waitFor(
        async () =>
          /is for another change/.test(programmed(await zoneItem(serve, 'alpha'))?.message ?? '')
            ? true
            : undefined,
        20_000,
      );
      assert.deepEqual(await answering(serve, 'alpha', all), all);

      // The exact hash: exactly the held change is applied.
      await confirm(state, 'dns/alpha', held.hash);
      await ready(serve, 'alpha');
      assert.deepEqual(await answering(serve, 'alpha', all), range(8, 20));
      assert.ok((await soaSerial(serve, 'alpha.test')) > serial);

      // A different change is held again (measured from the confirmed content): the old confirmation is stale.
      const serial2 = await soaSerial(serve, 'alpha.test');
      await writeFile(path.join(manifests, 'alpha.yaml'), zoneFile('alpha', range(13, 20)));
      const again = await heldHash(serve, 'alpha', held.hash);
      assert.notEqual(again.hash, held.hash);
      assert.match(again.message, /would delete 5 and change 0 of the zone's 14 RRsets/);
      assert.match(again.message, /is for another change and does nothing/);
      assert.deepEqual(await answering(serve, 'alpha', all), range(8, 20));
      assert.equal(await soaSerial(serve, 'alpha.test'), serial2);

      // The annotation in the zone's manifest confirms as well.
      await writeFile(
        path.join(manifests, 'alpha.yaml'),
        zoneFile('alpha', range(13, 20), `dns.zonekeeper.dev/confirm-change: "${again.hash}"`),
      );
      await ready(serve, 'alpha');
      assert.deepEqual(await answering(serve, 'alpha', all), range(13, 20));
    } finally {
      await serve.stop();
      await removeAll(manifests, state);
    }
  });

  test('a change under the threshold applies at once; a deletion arriving in slices within the window is held', async () => {
    const { manifests, state, serve } = await setUp({ 'beta.yaml': zoneFile('beta', range(1, 11)) }, '30');
    try {
      await ready(serve, 'beta');
      const serial = await soaSerial(serve, 'beta.test');
      // 2 of 12 (17 %): applied directly.
      await writeFile(path.join(manifests, 'beta.yaml'), zoneFile('beta', range(3, 11)));
      await waitFor(
        async () => ((await answering(serve, 'beta', [1, 2])).length === 0 ? true : undefined),
        20_000,
      );
      await ready(serve, 'beta');
      assert.ok((await soaSerial(serve, 'beta.test')) > serial);
      const serial2 = await soaSerial(serve, 'beta.test');
      // Two more within the window: 4 of the 12 the baseline had (33 %): held.
      await writeFile(path.join(manifests, 'beta.yaml'), zoneFile('beta', range(5, 11)));
      const held = await heldHash(serve, 'beta');
      assert.match(held.message, /would delete 4 and change 0 of the zone's 12 RRsets/);
      assert.deepEqual(
        await answering(serve, 'beta', range(1, 11)),
        range(3, 11),
        'the second slice is not applied',
      );
      assert.equal(await soaSerial(serve, 'beta.test'), serial2);
      // Undoing the second slice releases the hold without a confirmation.
      await writeFile(path.join(manifests, 'beta.yaml'), zoneFile('beta', range(3, 11)));
      await ready(serve, 'beta');
      assert.deepEqual(await answering(serve, 'beta', range(1, 11)), range(3, 11));
    } finally {
      await serve.stop();
      await removeAll(manifests, state);
    }
  });

  test('a deletion made while serve was stopped is served when it starts again: its own server kept nothing to hold', async () => {
    const { manifests, state, serve } = await setUp({ 'gamma.yaml': zoneFile('gamma', range(1, 12)) }, '1');
    let again: ServeProcess | undefined;
    try {
      await ready(serve, 'gamma');
      const serial = await soaSerial(serve, 'gamma.test');
      await serve.stop();
      // 6 of 13 RRsets deleted while nothing runs (46 %).
      await writeFile(path.join(manifests, 'gamma.yaml'), zoneFile('gamma', range(7, 12)));
      again = await startServe(manifests, state, ['--change-safety-window', '1']);
      // Holding it would leave the zone unanswered until confirmed: the first content is the baseline.
      await ready(again, 'gamma');
      assert.ok((await soaSerial(again, 'gamma.test')) > serial);
      assert.deepEqual(await answering(again, 'gamma', range(1, 12)), range(7, 12));
    } finally {
      await serve.stop();
      await again?.stop();
      await removeAll(manifests, state);
    }
  });

  test('changeSafety.enabled: false opts a zone out', async () => {
    const optOut = zoneFile('gamma', range(1, 11)).replace(
      'className: builtin}',
      'className: builtin, changeSafety: {enabled: false}}',
    );
    const { manifests, state, serve } = await setUp({ 'gamma.yaml': optOut }, '30');
    try {
      await ready(serve, 'gamma');
      await writeFile(path.join(manifests, 'gamma.yaml'), optOut.split('---\n').slice(0, 3).join('---\n'));
      await waitFor(
        async () => ((await answering(serve, 'gamma', [11])).length === 0 ? true : undefined),
        20_000,
      );
      await ready(serve, 'gamma');
      assert.deepEqual(await answering(serve, 'gamma', range(1, 11)), [1, 2]);
    } finally {
      await serve.stop();
      await removeAll(manifests, state);
    }
  });

  test('an emptied folder holds every zone and deletes nothing; confirming one zone removes only that zone', async () => {
    const { manifests, state, serve } = await setUp(
      { 'one.yaml': zoneFile('one', range(1, 3)), 'two.yaml': zoneFile('two', range(1, 3)) },
      '1',
      false,
    );
    try {
      await ready(serve, 'one');
      await ready(serve, 'two');
      const serials = [await soaSerial(serve, 'one.test'), await soaSerial(serve, 'two.test')];
      // What a bad checkout leaves: nothing.
      await rm(manifests, { recursive: true });
      await mkdir(manifests);
      const one = await heldHash(serve, 'one');
      const two = await heldHash(serve, 'two');
      assert.match(one.message, /holds no objects any more/);
      assert.notEqual(one.hash, two.hash);
      assert.deepEqual(await answering(serve, 'one', range(1, 3)), range(1, 3));
      assert.deepEqual(await answering(serve, 'two', range(1, 3)), range(1, 3));
      assert.deepEqual([await soaSerial(serve, 'one.test'), await soaSerial(serve, 'two.test')], serials);
      // Another zone's hash does not confirm this one.
      await confirm(state, 'dns/one', two.hash);
      await waitFor(
        async () =>
          /is for another change/.test(programmed(await zoneItem(serve, 'one'))?.message ?? '')
            ? true
            : undefined,
        20_000,
      );
      assert.deepEqual(await answering(serve, 'one', range(1, 3)), range(1, 3));
      // Confirming "one" removes it; "two" stays held and served.
      await confirm(state, 'dns/one', one.hash);
      await waitFor(async () => ((await zoneItem(serve, 'one')) === undefined ? true : undefined), 20_000);
      await waitFor(
        async () => ((await dig(serve.dnsPort, 'h1.one.test', 'A')).status === 'REFUSED' ? true : undefined),
        20_000,
      );
      assert.deepEqual(await answering(serve, 'two', range(1, 3)), range(1, 3));
      assert.equal(programmed(await zoneItem(serve, 'two'))?.reason, 'ChangeHeld');
      // The files come back: the hold is over without a confirmation.
      await writeFile(path.join(manifests, '00-class.yaml'), CLASS);
      await writeFile(path.join(manifests, 'two.yaml'), zoneFile('two', range(1, 3)));
      await ready(serve, 'two');
      assert.equal(await soaSerial(serve, 'two.test'), serials[1]);
    } finally {
      await serve.stop();
      await removeAll(manifests, state);
    }
  });
});

/** The class of the folder with PowerDNS at `apiUrl` as its backend, the API key in `keyFile`. */
function powerDnsClass(apiUrl: string, keyFile: string): string {
  return CLASS.replace(
    'backend: {builtin: {}}',
    `backend: {powerdns: {url: "${apiUrl}", apiKeySecretRef: {file: ${JSON.stringify(keyFile)}}}}`,
  );
}

describe('change safety with a real PowerDNS (serve programming pdns_server)', async () => {
  const unavailable = await powerDnsAvailable('lmdb');
  // One PowerDNS for the suite: each test has a zone of its own name.
  let pdns: PowerDnsProcess | undefined;
  before(async () => {
    if (!unavailable) pdns = await startPowerDns({ storage: 'lmdb' });
  });
  after(async () => {
    await pdns?.stop();
  });

  /** A folder whose class programs the suite's PowerDNS, with the zone `name` of record sets `hosts`. */
  async function folder(name: string, hosts: number[]) {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    const keyFile = `${manifests}.key`;
    await writeFile(keyFile, pdns!.apiKey);
    const write = async () => {
      await writeFile(path.join(manifests, '00-class.yaml'), powerDnsClass(pdns!.apiUrl, keyFile));
      await writeFile(path.join(manifests, `${name}.yaml`), zoneFile(name, hosts));
    };
    await write();
    return { manifests, state, keyFile, write };
  }

  /** Each of `hosts` answers its address from PowerDNS in zone `name`. */
  async function answeredByPowerDns(name: string, hosts: number[]): Promise<void> {
    for (const i of hosts)
      assert.deepEqual(rdataOf(await dig(pdns!.dnsPort, `h${i}.${name}.test`, 'A'), 'A'), [`192.0.2.${i}`]);
  }

  test('an emptied folder holds the zone: PowerDNS keeps the zone and every RRset', async (t) => {
    if (unavailable || !pdns) return t.skip(unavailable);
    const { manifests, state, keyFile, write } = await folder('pd', range(1, 11));
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state, ['--change-safety-window', '1']);
      const live = serve;
      await ready(live, 'pd');
      const rrsets = async () => {
        const r = await pdns!.api('GET', '/api/v1/servers/localhost/zones/pd.test.');
        if (r.status !== 200) return [];
        return ((r.body as { rrsets?: { name: string; type: string }[] }).rrsets ?? [])
          .map((x) => `${x.name} ${x.type}`)
          .sort();
      };
      const before = await rrsets();
      assert.equal(before.filter((x) => x.endsWith(' A')).length, 11);
      const [soaBefore] = rdataOf(await dig(pdns.dnsPort, 'pd.test', 'SOA'), 'SOA');
      // A bad checkout: the folder is empty.
      await rm(manifests, { recursive: true });
      await mkdir(manifests);
      const held = await heldHash(live, 'pd');
      assert.match(held.message, /holds no objects any more/);
      // Nothing deleted in PowerDNS: the zone, every RRset, the same SOA serial.
      assert.deepEqual(await rrsets(), before);
      await answeredByPowerDns('pd', range(1, 11));
      assert.deepEqual(rdataOf(await dig(pdns.dnsPort, 'pd.test', 'SOA'), 'SOA'), [soaBefore]);
      // Files back: Ready again, still nothing deleted.
      await write();
      await ready(live, 'pd');
      assert.deepEqual(await rrsets(), before);
    } finally {
      await serve?.stop();
      await removeAll(manifests, state, keyFile);
    }
  });

  test('a deletion made while serve was stopped is held when it starts again: PowerDNS keeps serving every RRset until it is confirmed', async (t) => {
    if (unavailable || !pdns) return t.skip(unavailable);
    const { manifests, state, keyFile } = await folder('pr', range(1, 12));
    let serve: ServeProcess | undefined;
    let again: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state, ['--change-safety-window', '1']);
      await ready(serve, 'pr');
      const [soaBefore] = rdataOf(await dig(pdns.dnsPort, 'pr.test', 'SOA'), 'SOA');
      await serve.stop();
      // 6 of 13 RRsets deleted while serve was stopped (46 %).
      await writeFile(path.join(manifests, 'pr.yaml'), zoneFile('pr', range(7, 12)));
      again = await startServe(manifests, state, ['--change-safety-window', '1']);
      const held = await heldHash(again, 'pr');
      assert.match(held.message, /would delete 6 and change 0 of the zone's 13 RRsets/);
      assert.match(held.message, /served before this start, by count/);
      // PowerDNS still serves the content from before the restart, at its serial.
      await answeredByPowerDns('pr', range(1, 12));
      assert.deepEqual(rdataOf(await dig(pdns.dnsPort, 'pr.test', 'SOA'), 'SOA'), [soaBefore]);
      await confirm(state, 'dns/pr', held.hash);
      await ready(again, 'pr');
      const served = pdns;
      await waitFor(async () =>
        rdataOf(await dig(served.dnsPort, 'h1.pr.test', 'A'), 'A').length === 0 ? true : undefined,
      );
      await answeredByPowerDns('pr', range(7, 12));
    } finally {
      await serve?.stop();
      await again?.stop();
      await removeAll(manifests, state, keyFile);
    }
  });
});
