/**
 * One serial, one content — against the real `zonekeeper serve`, dig and a real Knot secondary.
 *
 * 1. A state that cannot be written: the change waits (not Ready, /readyz 503, `zonekeeper status`
 *    says why), nothing new is served; once the state is writable again the change is served at a new
 *    serial, and AXFR, `zone export` and a restart all agree on the content of every serial.
 * 2. Crash cycles: `serve` is killed with SIGKILL at random moments during continuous edits and
 *    restarted each time, with Knot following it (NOTIFY, IXFR/AXFR); in about a third of the cycles
 *    the state also cannot be written for a while before the kill. Every version seen (AXFR from
 *    serve, `knotc zone-read` from Knot) goes into a ledger: no serial may ever be seen with two
 *    contents. An edit (a manifest file written) counts as accepted once serve has served a version
 *    that includes it; after every restart serve must serve exactly the files' content (so no accepted
 *    edit is lost) at a serial not below any served before, and Knot must converge to that serial and
 *    content.
 *
 *   npx node --test test/crash-consistency.test.ts                      # ~20 cycles, about a minute
 *   CRASH_CYCLES=300 npx node --test test/crash-consistency.test.ts     # hundreds, on demand
 *   CRASH_SEED=1234 ...                                                 # replays the edits and kill points
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { prng } from './support/prng.ts';
import { freePorts, type Secondary, startSecondary, type TsigKeyConfig } from './support/secondaries.ts';
import { axfr, knotZone, SerialLedger, type ZoneVersion, zoneVersion } from './support/zone-content.ts';
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

function classManifest(options: { keyFile?: string; notifyPort?: number } = {}): string {
  const keys = options.keyFile
    ? `    tsigKeys:
      - { name: ${KEY.name}, algorithm: ${KEY.algorithm}, secretRef: { file: ${JSON.stringify(options.keyFile)} } }
`
    : '';
  const notify = options.notifyPort
    ? `    notify: [{ address: "127.0.0.1:${options.notifyPort}"${options.keyFile ? `, tsigKey: ${KEY.name}` : ''} }]
`
    : '';
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZoneClass
metadata: { name: builtin }
spec:
  backend: { builtin: {} }
  nameServers: [ns1.example.com.]
  defaults:
    ttl: 300
    soa: { refresh: 2, retry: 2 }       # a secondary that missed a NOTIFY (serve killed) checks soon
  transfers:
    allowFrom: [127.0.0.1/32]
    requireTsig: false                  # the test's own AXFR is unsigned; Knot signs with the key
${keys}${notify}---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSZone
metadata: { name: example-com, namespace: dns }
spec:
  domainName: example.com
  className: builtin
---
apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ns1, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: ns1
  type: A
  records: ["192.0.2.53"]
`;
}

function recordManifest(name: string, address: string): string {
  return `apiVersion: dns.zonekeeper.dev/v1alpha1
kind: DNSRecordSet
metadata: { name: ${name}, namespace: dns }
spec:
  zoneRef: { name: example-com }
  name: ${name}
  type: A
  records: ["${address}"]
`;
}

/** The zone's content for these record addresses, as `zoneVersion` normalizes it. */
function expectedContent(records: ReadonlyMap<string, string>): string {
  const lines = [`${ZONE} 300 NS ns1.${ZONE}`, `ns1.${ZONE} 300 A 192.0.2.53`];
  for (const [name, address] of records) lines.push(`${name}.${ZONE} 300 A ${address}`);
  return lines.sort().join('\n');
}

/** Writes a file whole (temporary file + rename), so serve never reads half of it. */
async function writeAtomic(file: string, text: string, scratch: string): Promise<void> {
  const tmp = path.join(scratch, `${path.basename(file)}.${randomBytes(4).toString('hex')}`);
  await writeFile(tmp, text);
  await rename(tmp, file);
}

interface ZoneView {
  serial?: number;
  hash?: string;
  ready?: { status: string; reason: string; message: string };
}

async function zoneView(httpUrl: string): Promise<ZoneView | undefined> {
  const body = (await (await fetch(`${httpUrl}/api/v1/resources`)).json()) as {
    items: {
      kind: string;
      metadata: { namespace?: string; name: string };
      status?: {
        serial?: number;
        hash?: string;
        conditions?: { type: string; status: string; reason: string; message: string }[];
      };
    }[];
  };
  const z = body.items.find(
    (i) => i.kind === 'DNSZone' && i.metadata.namespace === 'dns' && i.metadata.name === 'example-com',
  );
  if (!z) return undefined;
  const ready = z.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    ...(z.status?.serial !== undefined ? { serial: z.status.serial } : {}),
    ...(z.status?.hash !== undefined ? { hash: z.status.hash } : {}),
    ...(ready ? { ready } : {}),
  };
}

/** SIGKILL, then wait until the process is gone (no graceful anything). */
async function kill9(serve: ServeProcess): Promise<void> {
  try {
    process.kill(serve.pid, 'SIGKILL');
  } catch {
    return;
  }
  await waitFor(
    async () => {
      try {
        process.kill(serve.pid, 0);
        return undefined;
      } catch {
        return true;
      }
    },
    10_000,
    5,
  );
}

describe('one serial, one content with a state that cannot be written', { timeout: 120_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  });

  test('the change waits until its serial is saved; AXFR, zone export and restarts agree', async () => {
    const manifests = await tempDir('manifests');
    const base = await tempDir('state');
    const state = path.join(base, 'state');
    cleanup.push(() => removeAll(manifests, base));
    await writeFile(path.join(manifests, 'zone.yaml'), classManifest());
    await writeFile(path.join(manifests, 'x.yaml'), recordManifest('x', '192.0.2.10'));
    await writeFile(path.join(manifests, 'y.yaml'), recordManifest('y', '192.0.2.20'));
    const ledger = new SerialLedger();
    let serve = await startServe(manifests, state);
    cleanup.push(() => serve.stop());
    const seen = async (label: string): Promise<ZoneVersion> => {
      const v = await axfr(serve.dnsPort, ZONE);
      assert.ok(v, `${label}: AXFR failed\n${serve.log()}`);
      ledger.note(v, label);
      return v;
    };
    const v0 = await seen('start');
    assert.match(v0.content, /x\.example\.com\. 300 A 192\.0\.2\.10/);

    // The state cannot be written: the folder is replaced by a file (root ignores permissions, and
    // this breaks whatever files the state consists of).
    await rename(state, `${state}.away`);
    await writeFile(state, 'not a folder\n');
    await writeFile(path.join(manifests, 'x.yaml'), recordManifest('x', '192.0.2.11'));
    const { value: failing } = await waitFor(async () => {
      const z = await zoneView(serve.httpUrl);
      return z?.ready?.reason === 'SerialNotSaved' ? z : undefined;
    });
    assert.equal(failing.ready?.status, 'False');
    assert.match(failing.ready?.message ?? '', /could not be saved/);
    const readyz = await fetch(`${serve.httpUrl}/readyz`);
    assert.equal(readyz.status, 503);
    assert.match(await readyz.text(), /dns\/example-com.*SerialNotSaved/);
    const status = await run(process.execPath, [CLI, 'status', '--http', serve.httpUrl]);
    assert.match(status.stdout, /SerialNotSaved/);
    // Nothing new is served meanwhile: the old content at the old serial.
    const during = await seen('while the state is not writable');
    assert.deepEqual(during, v0);

    // Writable again: the change is served, at a new serial.
    await rm(state);
    await rename(`${state}.away`, state);
    const { value: v1 } = await waitFor(async () => {
      const v = await seen('after the state is writable');
      return v.serial !== v0.serial ? v : undefined;
    }, 90_000);
    assert.ok(v1.serial > v0.serial);
    assert.match(v1.content, /x\.example\.com\. 300 A 192\.0\.2\.11/);
    await waitFor(async () => ((await zoneView(serve.httpUrl))?.ready?.status === 'True' ? true : undefined));
    assert.equal((await fetch(`${serve.httpUrl}/readyz`)).status, 200);

    // Then y: served with the new x, at a newer serial.
    await writeFile(path.join(manifests, 'y.yaml'), recordManifest('y', '192.0.2.21'));
    const { value: v2 } = await waitFor(async () => {
      const v = await seen('after y changed');
      return /y\.example\.com\. 300 A 192\.0\.2\.21/.test(v.content) ? v : undefined;
    });
    assert.ok(v2.serial > v1.serial);
    assert.match(v2.content, /x\.example\.com\. 300 A 192\.0\.2\.11/);
    // Once the hash of that serial is saved, zone export shows that serial with that content.
    await waitFor(async () => {
      const z = await zoneView(serve.httpUrl);
      return z?.serial === v2.serial && z.hash !== undefined ? true : undefined;
    });
    const exported = await run(process.execPath, [
      CLI,
      'zone',
      'export',
      '--manifests',
      manifests,
      '--state-dir',
      state,
      '--zone',
      ZONE,
    ]);
    const exportedVersion = zoneVersion(exported.stdout.split('\n'));
    assert.ok(exportedVersion);
    assert.deepEqual(exportedVersion, v2, 'zone export shows the served serial with the served content');

    // A crash and a graceful restart: the same serial with the same content, or a newer serial.
    for (const how of ['SIGKILL', 'SIGTERM'] as const) {
      if (how === 'SIGKILL') await kill9(serve);
      else await serve.stop();
      serve = await startServe(manifests, state);
      const v = await seen(`after a ${how} restart`);
      assert.ok(v.serial >= v2.serial, `${how}: serial went back to ${v.serial}`);
      assert.equal(v.content, v2.content);
    }
    assert.deepEqual(ledger.violations, []);
  });

  test('zone export shows the served serial with the served content, also for a version kept by serve', async () => {
    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    cleanup.push(() => removeAll(manifests, state));
    await writeFile(path.join(manifests, 'zone.yaml'), classManifest());
    await writeFile(path.join(manifests, 'x.yaml'), recordManifest('x', '192.0.2.10'));
    const serve = await startServe(manifests, state);
    cleanup.push(() => serve.stop());
    const exported = async () =>
      zoneVersion(
        (
          await run(process.execPath, [
            CLI,
            'zone',
            'export',
            '--manifests',
            manifests,
            '--state-dir',
            state,
            '--zone',
            ZONE,
          ])
        ).stdout.split('\n'),
      );
    /** Waits until the served serial's hash is saved, then compares the export with AXFR. */
    const agree = async (label: string) => {
      const served = await axfr(serve.dnsPort, ZONE);
      assert.ok(served, label);
      await waitFor(async () => {
        const z = await zoneView(serve.httpUrl);
        return z?.serial === served.serial && z.hash !== undefined ? true : undefined;
      });
      assert.deepEqual(await exported(), served, label);
      return served;
    };
    await agree('at start');
    // An invalid value: serve keeps serving the last valid version, and so does the export.
    await writeFile(path.join(manifests, 'x.yaml'), recordManifest('x', '192.0.2.300'));
    await waitFor(async () => {
      const body = (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as {
        problems: { file: string }[];
      };
      return body.problems.some((p) => p.file.endsWith('x.yaml')) ? true : undefined;
    });
    const kept = await agree('with x kept at its last valid version');
    assert.match(kept.content, /x\.example\.com\. 300 A 192\.0\.2\.10/);
    await writeFile(path.join(manifests, 'x.yaml'), recordManifest('x', '192.0.2.11'));
    await waitFor(async () => {
      const v = await axfr(serve.dnsPort, ZONE);
      return v && /192\.0\.2\.11/.test(v.content) ? true : undefined;
    });
    await agree('after a valid change');
  });
});

describe('crash consistency: serve killed during edits, a Knot secondary following', {
  timeout: 900_000,
}, () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => {});
  });

  test('no serial with two contents, no accepted edit lost, the secondary converges', async (t) => {
    const cycles = Math.max(1, Number(process.env.CRASH_CYCLES) || 20);
    const seed = Number(process.env.CRASH_SEED) || Math.floor(Math.random() * 2 ** 31);
    t.diagnostic(`CRASH_SEED=${seed} CRASH_CYCLES=${cycles}`);
    const random = prng(seed);
    const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
    const context = (text: string) => `CRASH_SEED=${seed}: ${text}`;

    const manifests = await tempDir('manifests');
    const state = await tempDir('state');
    const scratch = await tempDir('scratch');
    cleanup.push(() => removeAll(manifests, state, scratch));
    const keyFile = path.join(scratch, 'tsig.key');
    await writeFile(keyFile, `${KEY.secret}\n`);
    const [dnsPort, knotPort] = await freePorts(2);
    await writeFile(path.join(manifests, 'zone.yaml'), classManifest({ keyFile, notifyPort: knotPort! }));
    await mkdir(path.join(manifests, 'records'));
    /** What the files say now: record name → address (absent: no file). */
    const files = new Map<string, string>();
    const names = Array.from({ length: 8 }, (_, i) => `r${i}`);
    let edits = 0;
    let brokenCycles = 0;
    const edit = async () => {
      const name = names[between(0, names.length)]!;
      const file = path.join(manifests, 'records', `${name}.yaml`);
      if (files.has(name) && random() < 0.1) {
        await rm(file, { force: true });
        files.delete(name);
      } else {
        const address = `10.${between(0, 256)}.${between(0, 256)}.${between(1, 255)}`;
        await writeAtomic(file, recordManifest(name, address), scratch);
        files.set(name, address);
      }
      edits++;
    };
    for (let i = 0; i < 4; i++) await edit();

    const ledger = new SerialLedger();
    /** Record values serve has served (accepted edits). */
    const accepted = new Set<string>();
    const start = () => startServe(manifests, state, ['--dns', `127.0.0.1:${dnsPort}`]);
    let serve = await start();
    cleanup.push(() => serve.stop());
    const knot: Secondary = await startSecondary({
      kind: 'knot',
      zone: ZONE,
      primaryPort: dnsPort!,
      key: KEY,
      port: knotPort!,
    });
    cleanup.push(() => knot.close());
    const fromServe = async (label: string) => {
      const v = await axfr(dnsPort!, ZONE);
      ledger.note(v, label);
      for (const line of v?.content.split('\n') ?? []) accepted.add(line);
      return v;
    };
    const fromKnot = async (label: string) => {
      const v = await knotZone(knot, ZONE);
      ledger.note(v, label);
      return v;
    };

    /** After a (re)start, with no edits running: serve serves the files, Knot follows. */
    const settle = async (label: string) => {
      const highest = ledger.highest;
      const v = await fromServe(label);
      assert.ok(v, context(`${label}: AXFR from serve failed\n${serve.log()}`));
      assert.equal(v.content, expectedContent(files), context(`${label}: serve does not serve the files`));
      if (highest !== undefined)
        assert.ok(v.serial >= highest, context(`${label}: serial ${v.serial} is below ${highest}`));
      await waitFor(
        async () => {
          const k = await fromKnot(`knot, ${label}`);
          return k?.serial === v.serial ? true : undefined;
        },
        30_000,
        50,
      ).catch((e: Error) => {
        throw new Error(
          context(`${label}: Knot did not converge to ${v.serial}: ${e.message}\n${knot.lastRunLog()}`),
        );
      });
      assert.deepEqual(ledger.violations, [], context(label));
    };
    await settle('first start');

    for (let cycle = 1; cycle <= cycles; cycle++) {
      const label = `cycle ${cycle}`;
      // Edits and observation run together; serve is killed at a random moment among them.
      // Edits for `runFor` ms; serve is killed at a random moment during them or in the quiet after
      // them (when the delayed content hash of the last serial may have been saved, or not).
      const runFor = between(150, 1200);
      const killAt = between(0, runFor + 1500);
      const startedAt = performance.now();
      let killed = false;
      const editing = (async () => {
        while (performance.now() - startedAt < runFor) {
          await edit();
          await new Promise((r) => setTimeout(r, between(5, 60)));
        }
      })();
      const observing = (async () => {
        for (let n = 0; !killed; n++) {
          await fromServe(`serve, ${label}`);
          if (n % 4 === 0) await fromKnot(`knot, ${label}`);
          await new Promise((r) => setTimeout(r, between(5, 40)));
        }
      })();
      // In about a third of the cycles the state cannot be written for a while (the folder replaced by
      // a file): from a moment during the edits until a moment before or after the kill.
      const breakAt = random() < 0.35 ? between(0, runFor) : undefined;
      const restoreAt = breakAt === undefined ? 0 : between(breakAt + 50, killAt + 300);
      const breaking =
        breakAt === undefined
          ? Promise.resolve()
          : (async () => {
              await new Promise((r) => setTimeout(r, breakAt));
              await rename(state, `${state}.away`);
              await writeFile(state, 'not a folder\n');
              brokenCycles++;
              await new Promise((r) => setTimeout(r, restoreAt - breakAt));
              await rm(state);
              await rename(`${state}.away`, state);
            })();
      await new Promise((r) => setTimeout(r, killAt));
      await kill9(serve);
      killed = true;
      await Promise.all([editing, observing, breaking]);
      assert.deepEqual(ledger.violations, [], context(label));
      serve = await start().catch((e: Error) => {
        throw new Error(context(`${label}: serve did not restart: ${e.message}`));
      });
      await settle(`after the restart of ${label}`);
    }

    t.diagnostic(
      `${cycles} crash cycles (${brokenCycles} with the state unwritable for a while), ${edits} edits, ${ledger.size} distinct serials seen (serve and Knot), ${accepted.size} record versions served`,
    );
    assert.deepEqual(ledger.violations, [], context('at the end'));
  });
});
