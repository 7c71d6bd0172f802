/**
 * Replication to real secondaries: one `zonekeeper serve` is the primary of `example.com` for Knot DNS
 * (`knotd`), NSD (`nsd`) and BIND (`named`), configured as docs/transfers.md shows (TSIG key by
 * reference, ACL, NOTIFY to each secondary, a 3-change journal, SOA refresh 3600 s so that only
 * NOTIFY can explain a quick update). Proves the initial transfer, NOTIFY + IXFR for a change (and
 * measures the time from the file write to the new answer on each secondary — docs/benchmarks.md),
 * the AXFR fallback for a secondary that is further behind than the journal, and that transfers with
 * a wrong key, without a key, or from outside allowFrom are refused.
 *
 *   npx node --test test/secondaries.test.ts                         # about 20 s
 *   REPLICATION_CHANGES=30 npx node --test test/secondaries.test.ts  # the docs/benchmarks.md figures
 *
 * SECONDARIES_WORKERS=N serves with `serve --workers N`: transfers then reach one of its N DNS
 * threads (SO_REUSEPORT), which answer IXFR from the journal entries the main thread sent them in
 * wire form with each change (ADR 0020 §6).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Rdata } from '../src/dns/rdata.ts';
import { RRType } from '../src/dns/rrtype.ts';
import { buildQuery, exchange } from './support/dns-client.ts';
import { freePorts, type Secondary, startSecondary, type TsigKeyConfig } from './support/secondaries.ts';
import { removeAll, type ServeProcess, startServe, tempDir, waitFor } from './support/zonekeeper-process.ts';

const ZONE = 'example.com.';
const JOURNAL_SIZE = 3;
const KEY: TsigKeyConfig = {
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: randomBytes(32).toString('base64'),
};
/**
 * Changes timed in "a change reaches each secondary"; REPLICATION_CHANGES=30 for the figures of
 * docs/benchmarks.md (each adds about 1.3 s).
 */
const MEASURED_CHANGES = Math.max(1, Number(process.env.REPLICATION_CHANGES) || 5);
/** Pause between measured changes, once every secondary has the previous one. */
const ISOLATION_MS = 1100;

function classManifest(keyFile: string, notifyPorts: number[]): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com., ns2.example.com.]
  defaults:
    ttl: 300
    soa: { refresh: 3600, retry: 600 }      # secondaries poll hourly: a quick update is NOTIFY's doing
  transfers:
    allowFrom: [127.0.0.1/32, "::1"]        # not 127.0.0.2: the ACL test transfers from there
    tsigKeys:
      - { name: ${KEY.name}, algorithm: ${KEY.algorithm}, secretRef: { file: ${JSON.stringify(keyFile)} } }
    notify:
${notifyPorts.map((p) => `      - { address: "127.0.0.1:${p}", tsigKey: ${KEY.name} }`).join('\n')}
    journalSize: ${JOURNAL_SIZE}
`;
}

function zoneManifests(): string {
  const record = (name: string, owner: string, type: string, records: string[]) =>
    `---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${name}, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: "${owner}"
  type: ${type}
  records: ${JSON.stringify(records)}
`;
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
${record('ns1', 'ns1', 'A', ['192.0.2.53'])}${record('ns2', 'ns2', 'A', ['198.51.100.53'])}${record('mail', '@', 'MX', ['10 mail.example.com.'])}${record('mail-a', 'mail', 'A', ['192.0.2.25'])}${record('txt', '@', 'TXT', ['"v=spf1 mx -all"'])}${record('api', 'api', 'AAAA', ['2001:db8::1', '2001:db8::2'])}`;
}

/** The record set the tests change: www A, in a file of its own. */
function wwwManifest(address: string): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: www, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: www
  type: A
  records: ["${address}"]
`;
}

/** Sum of a Prometheus counter's samples whose labels include `labels`. */
/** `serve --workers N` (SECONDARIES_WORKERS); 1: no DNS threads. */
const WORKERS = Number(process.env.SECONDARIES_WORKERS ?? '1');

async function metric(httpUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  // DNS threads report their counters to the main thread once a second: wait for the last report.
  if (WORKERS > 1) await new Promise((r) => setTimeout(r, 1_200));
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Runs kdig and returns its output (stdout and stderr), whatever its exit status. */
function kdig(args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile('kdig', ['+time=2', '+retry=0', ...args], { timeout: 10_000 }, (_e, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
}

/** What each secondary logs when it starts with the zone at `serial`. */
const LOADED: Partial<Record<Secondary['kind'], (serial: number) => RegExp>> = {
  bind: (serial) => new RegExp(`zone example\\.com/IN: loaded serial ${serial}`),
  knot: (serial) => new RegExp(`\\[example\\.com\\.\\] loaded, serial none -> ${serial}`),
};
/** ... when a NOTIFY for `serial` arrives. */
const NOTIFIED: Partial<Record<Secondary['kind'], (serial: number) => RegExp>> = {
  bind: (serial) => new RegExp(`notify from 127\\.0\\.0\\.1#\\d+: serial ${serial}`),
  knot: (serial) => new RegExp(`notify, incoming, remote 127\\.0\\.0\\.1@\\d+, serial ${serial}`),
};
/** ... when it has transferred the zone from `from` to `to`. */
const TRANSFERRED: Partial<Record<Secondary['kind'], (from: number, to: number) => RegExp>> = {
  bind: (_from, to) => new RegExp(`transferred serial ${to}`),
  knot: (from, to) => new RegExp(`zone updated, .*serial ${from} -> ${to}`),
};

/** `median 88 ms, min 78, max 177 (177, 96, 78, 79, 88)` */
function fmt(v: number[]): string {
  const list = v.map((x) => x.toFixed(0)).join(', ');
  return `median ${median(v).toFixed(0)} ms, min ${Math.min(...v).toFixed(0)}, max ${Math.max(...v).toFixed(0)} (${list})`;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

describe('replication to Knot, NSD and BIND secondaries', {
  timeout: 120_000 + MEASURED_CHANGES * 2_000,
}, () => {
  let manifests: string;
  let stateDir: string;
  let secretDir: string;
  let serve: ServeProcess | undefined;
  const secondaries: Secondary[] = [];
  let wrongKeySecondary: Secondary | undefined;
  let addressCounter = 10;

  /** Zonekeeper's own SOA serial. */
  const primarySerial = async (): Promise<number | undefined> => {
    const reply = await exchange(serve!.dnsPort, buildQuery({ name: ZONE, type: RRType.SOA }));
    const soa = reply.message?.answers.find((rr) => rr.type === RRType.SOA);
    return soa ? (soa.data as Extract<Rdata, { type: 'SOA' }>).serial : undefined;
  };

  /** Writes a new www address and waits until Zonekeeper serves it at a higher serial. */
  const change = async (): Promise<{ address: string; serial: number; writtenAt: number }> => {
    const before = await primarySerial();
    const address = `192.0.2.${++addressCounter}`;
    const writtenAt = performance.now();
    await writeFile(path.join(manifests, 'www.yaml'), wwwManifest(address));
    const { value: serial } = await waitFor(
      async () => {
        const s = await primarySerial();
        return s !== undefined && s !== before ? s : undefined;
      },
      10_000,
      5,
    );
    return { address, serial, writtenAt };
  };

  /** How long after `since` each secondary answers `address` for www at `serial`, in ms. */
  const replication = (
    targets: readonly Secondary[],
    address: string,
    serial: number,
    since: number,
    timeoutMs = 10_000,
  ): Promise<number[]> =>
    Promise.all(
      targets.map(async (s) => {
        await waitFor(
          async () => {
            const [a, soa] = await Promise.all([s.answer(`www.${ZONE}`, 'A'), s.soaSerial()]);
            return a?.[0] === address && a.length === 1 && soa === serial ? true : undefined;
          },
          timeoutMs,
          5,
        ).catch((e: Error) => {
          throw new Error(
            `${s.program} did not get ${address} at serial ${serial}: ${e.message}\n${s.log()}`,
          );
        });
        return performance.now() - since;
      }),
    );

  before(async () => {
    manifests = await tempDir('secondaries-manifests');
    stateDir = await tempDir('secondaries-state');
    secretDir = await tempDir('secondaries-secret');
    const keyFile = path.join(secretDir, 'transfer-key');
    await writeFile(keyFile, `${KEY.secret}\n`, { mode: 0o600 });
    const ports = await freePorts(3);
    await writeFile(path.join(manifests, 'class.yaml'), classManifest(keyFile, ports));
    await writeFile(path.join(manifests, 'zone.yaml'), zoneManifests());
    await writeFile(path.join(manifests, 'www.yaml'), wwwManifest('192.0.2.10'));
    serve = await startServe(manifests, stateDir, WORKERS > 1 ? ['--workers', String(WORKERS)] : []);
    const kinds = ['knot', 'nsd', 'bind'] as const;
    const started = await Promise.allSettled(
      kinds.map((kind, i) =>
        startSecondary({ kind, zone: ZONE, primaryPort: serve!.dnsPort, key: KEY, port: ports[i]! }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') secondaries.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  });

  after(async () => {
    await Promise.all([...secondaries, wrongKeySecondary].map((s) => s?.close()));
    await serve?.stop();
    await removeAll(manifests, stateDir, secretDir);
  });

  test('initial transfer: each secondary serves the zone at the primary serial', async (t) => {
    const serial = await primarySerial();
    assert.ok(serial !== undefined);
    for (const s of secondaries) {
      // A secondary that bootstrapped before the startup NOTIFY retry reached it is already current.
      await waitFor(async () => ((await s.soaSerial()) === serial ? true : undefined), 10_000);
      assert.deepEqual(await s.answer(`www.${ZONE}`, 'A'), ['192.0.2.10'], s.program);
      assert.deepEqual(await s.answer(`api.${ZONE}`, 'AAAA'), ['2001:db8::1', '2001:db8::2'], s.program);
      assert.deepEqual(await s.answer(ZONE, 'MX'), ['10 mail.example.com.'], s.program);
    }
    // Each secondary's first transfer is an AXFR, or an IXFR answered AXFR-style.
    const full =
      (await metric(serve!.httpUrl, 'zonekeeper_transfers_total', { type: 'AXFR', result: 'ok' })) +
      (await metric(serve!.httpUrl, 'zonekeeper_transfers_total', {
        type: 'IXFR',
        result: 'ok-axfr-fallback',
      }));
    assert.ok(full >= secondaries.length, `${full} full transfers for ${secondaries.length} secondaries`);
    // The same AXFR from a client: every message signed, the zone complete.
    const axfr = await kdig([
      '@127.0.0.1',
      '-p',
      String(serve!.dnsPort),
      '-y',
      `${KEY.algorithm}:${KEY.name}:${KEY.secret}`,
      ZONE,
      'AXFR',
    ]);
    assert.match(axfr, /Received \d+ B \(\d+ messages, 12 records\)/, axfr);
    assert.doesNotMatch(axfr, /^;; (ERROR|WARNING)/m, axfr);
    t.diagnostic(`serial ${serial}; full transfers ${full}`);
  });

  test('a change reaches each secondary by NOTIFY and IXFR, well before the refresh timer', async (t) => {
    const url = serve!.httpUrl;
    const notifiedBefore = await metric(url, 'zonekeeper_notify_total', { result: 'ok' });
    const ixfrBefore = await metric(url, 'zonekeeper_transfers_total', { type: 'IXFR', result: 'ok' });
    const samples = new Map<string, number[]>(secondaries.map((s) => [s.program, []]));
    const primary: number[] = [];
    for (let i = 0; i < MEASURED_CHANGES; i++) {
      // Isolated changes: NSD reloads at most once a second (xfrd-reload-timeout: 1, its default), so
      // a change right after the previous one (or its first transfer) would measure that pause;
      // changes back to back are timed in the next test.
      await new Promise((r) => setTimeout(r, ISOLATION_MS));
      const { address, serial, writtenAt } = await change();
      primary.push(performance.now() - writtenAt);
      const times = await replication(secondaries, address, serial, writtenAt, 5_000);
      for (const [j, s] of secondaries.entries()) samples.get(s.program)!.push(times[j]!);
    }
    const notified = (await metric(url, 'zonekeeper_notify_total', { result: 'ok' })) - notifiedBefore;
    const ixfr =
      (await metric(url, 'zonekeeper_transfers_total', { type: 'IXFR', result: 'ok' })) - ixfrBefore;
    // Every secondary acknowledged a NOTIFY for every change and fetched it incrementally.
    assert.ok(notified >= MEASURED_CHANGES * secondaries.length, `${notified} NOTIFY acknowledged`);
    assert.ok(ixfr >= MEASURED_CHANGES * secondaries.length, `${ixfr} IXFR answered incrementally`);
    t.diagnostic(`zonekeeper (primary reload): ${fmt(primary)} over ${MEASURED_CHANGES} changes`);
    for (const [program, v] of samples) {
      t.diagnostic(`${program}: ${fmt(v)}`);
      t.diagnostic(`${program} after the primary served it: ${fmt(v.map((x, i) => x - primary[i]!))}`);
      // The SOA refresh is 3600 s: only NOTIFY explains an update within seconds.
      assert.ok(Math.max(...v) < 5_000, `${program}: ${v.join(', ')} ms`);
    }
  });

  test('secondaries further behind than the journal catch up through an AXFR-style IXFR', async (t) => {
    const url = serve!.httpUrl;
    // named and knotd are stopped; nsd stays up and keeps up.
    const stopped = secondaries.filter((s) => s.kind !== 'nsd');
    const others = secondaries.filter((s) => s.kind === 'nsd');
    const fallbackBefore = await metric(url, 'zonekeeper_transfers_total', {
      type: 'IXFR',
      result: 'ok-axfr-fallback',
    });
    const retriesBefore = await metric(url, 'zonekeeper_notify_total', { result: 'retry' });
    const behind = await primarySerial();
    for (const s of stopped) assert.equal(await s.soaSerial(), behind, s.program);
    await Promise.all(stopped.map((s) => s.stop()));
    // More changes than the journal holds: it no longer reaches back to their serial. Back to back,
    // each written once nsd has the previous one: timed as a burst.
    let last: Awaited<ReturnType<typeof change>> | undefined;
    const burst: number[] = [];
    for (let i = 0; i <= JOURNAL_SIZE; i++) {
      last = await change();
      burst.push(...(await replication(others, last.address, last.serial, last.writtenAt)));
    }
    t.diagnostic(`nsd, changes back to back: ${fmt(burst)}`);
    // They come back with their old zone files and journals, at the old serial...
    const restartedAt = performance.now();
    await Promise.all(stopped.map((s) => s.restart()));
    for (const s of stopped) assert.match(s.lastRunLog(), LOADED[s.kind]!(behind!), s.program);
    // ...and the NOTIFY for the latest serial, retried while they were down, makes them refresh.
    const times = await replication(stopped, last!.address, last!.serial, restartedAt, 30_000);
    const fallback =
      (await metric(url, 'zonekeeper_transfers_total', { type: 'IXFR', result: 'ok-axfr-fallback' })) -
      fallbackBefore;
    assert.ok(
      fallback >= stopped.length,
      `${fallback} IXFR from a serial the journal no longer holds answered with the whole zone`,
    );
    assert.ok((await metric(url, 'zonekeeper_notify_total', { result: 'retry' })) > retriesBefore);
    for (const [i, s] of stopped.entries()) {
      // Each logs the NOTIFY that woke it and the transfer it made.
      const log = s.lastRunLog();
      assert.match(log, NOTIFIED[s.kind]!(last!.serial), `${s.program}:\n${log}`);
      assert.match(log, TRANSFERRED[s.kind]!(behind!, last!.serial), `${s.program}:\n${log}`);
      t.diagnostic(
        `${s.program} at ${behind}, ${JOURNAL_SIZE + 1} changes behind: at ${last!.serial} ${times[i]!.toFixed(0)} ms after the restarts began`,
      );
    }
  });

  test('transfers with a wrong key, without a key, or from outside allowFrom are refused', async () => {
    const url = serve!.httpUrl;
    const port = String(serve!.dnsPort);
    const count = (type: string, result: string) =>
      metric(url, 'zonekeeper_transfers_total', { type, result });
    const wrongSecret = randomBytes(32).toString('base64');

    const badsig = await count('AXFR', 'badsig');
    const out = await kdig([
      '@127.0.0.1',
      '-p',
      port,
      '-y',
      `hmac-sha256:${KEY.name}:${wrongSecret}`,
      ZONE,
      'AXFR',
    ]);
    assert.match(out, /BADSIG/, out);
    assert.doesNotMatch(out, /IN\s+A\s/, out);
    assert.equal(await count('AXFR', 'badsig'), badsig + 1);

    const badkey = await count('AXFR', 'badkey');
    const unknownKey = await kdig([
      '@127.0.0.1',
      '-p',
      port,
      '-y',
      `hmac-sha256:other-key:${KEY.secret}`,
      ZONE,
      'AXFR',
    ]);
    assert.match(unknownKey, /BADKEY/, unknownKey);
    assert.equal(await count('AXFR', 'badkey'), badkey + 1);

    const unsigned = await count('AXFR', 'unsigned');
    const plain = await kdig(['@127.0.0.1', '-p', port, ZONE, 'AXFR']);
    assert.match(plain, /REFUSED/, plain);
    assert.equal(await count('AXFR', 'unsigned'), unsigned + 1);

    const ixfrBadsig = await count('IXFR', 'badsig');
    const ixfr = await kdig([
      '@127.0.0.1',
      '-p',
      port,
      '+tcp',
      '-y',
      `hmac-sha256:${KEY.name}:${wrongSecret}`,
      ZONE,
      'IXFR=1',
    ]);
    assert.match(ixfr, /BADSIG/, ixfr);
    assert.equal(await count('IXFR', 'badsig'), ixfrBadsig + 1);

    // The right key from 127.0.0.2, outside allowFrom (127.0.0.1/32): refused by the ACL.
    const refused = await count('AXFR', 'refused');
    const outside = await kdig([
      '-b',
      '127.0.0.2',
      '@127.0.0.1',
      '-p',
      port,
      '-y',
      `${KEY.algorithm}:${KEY.name}:${KEY.secret}`,
      ZONE,
      'AXFR',
    ]);
    assert.match(outside, /REFUSED/, outside);
    assert.equal(await count('AXFR', 'refused'), refused + 1);

    // A real secondary configured with the wrong secret never gets the zone.
    const badsigAll = async () =>
      (await count('AXFR', 'badsig')) + (await count('IXFR', 'badsig')) + (await count('SOA', 'badsig'));
    const before = await badsigAll();
    wrongKeySecondary = await startSecondary({
      kind: 'knot',
      zone: ZONE,
      primaryPort: serve!.dnsPort,
      key: { ...KEY, secret: wrongSecret },
      waitForZone: false,
    });
    await waitFor(async () => ((await badsigAll()) > before ? true : undefined), 10_000);
    assert.equal(await wrongKeySecondary.soaSerial(), undefined);
    assert.match(wrongKeySecondary.log(), /BADSIG|TSIG/i);
  });
});
