/**
 * Folder mode end to end: the real `zonekeeper serve` on a folder of manifests, queried with dig —
 * the last valid version of anything made invalid, what the state folder remembers across restarts,
 * and `zonekeeper validate --state-dir` telling the same story.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dig, rdataOf } from './support/dig.ts';
import { buildQuery, exchange } from './support/dns-client.ts';
import {
  CLI,
  copyExamples,
  ROOT,
  removeAll,
  type ServeProcess,
  startServe,
  tempDir,
  waitFor,
} from './support/zonekeeper-process.ts';

const run = promisify(execFile);

interface Item {
  kind: string;
  metadata: { name: string; namespace?: string; generation?: number };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}
interface Resources {
  items: Item[];
  problems: { file: string; line?: number; path?: string; code: string; message: string; object?: string }[];
}

async function resources(serve: ServeProcess): Promise<Resources> {
  return (await (await fetch(`${serve.httpUrl}/api/v1/resources`)).json()) as Resources;
}

function condition(body: Resources, kind: string, key: string, type: string) {
  const item = body.items.find(
    (i) =>
      i.kind === kind &&
      `${i.metadata.namespace ? `${i.metadata.namespace}/` : ''}${i.metadata.name}` === key,
  );
  return item?.status?.conditions?.find((c) => c.type === type);
}

function soaSerial(lines: string[]): number {
  const soa = lines.find((l) => l.split(' ')[3] === 'SOA');
  assert.ok(soa, `no SOA in ${JSON.stringify(lines)}`);
  return Number(soa.split(' ')[6]);
}

async function answers(serve: ServeProcess, name: string, type: string): Promise<string[]> {
  return rdataOf(await dig(serve.dnsPort, name, type), type);
}

/** Runs `zonekeeper validate` and returns its exit code and output. */
async function validate(...args: string[]): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, [CLI, 'validate', ...args]).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );
}

const recordSet = (name: string, owner: string, type: string, records: string[]) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\nspec:\n  zoneRef: {name: example-com}\n  name: ${owner}\n  type: ${type}\n  records: ${JSON.stringify(records)}\n`;

describe('folder mode: an invalid record value keeps the last valid version', () => {
  test('ns1 192.0.2.53 -> 192.0.2.531: ns1 keeps answering, Accepted=False with the problem, and a younger conflicting record set does not take over', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state);
      const live = serve;
      // A younger record set for the same name and type: refused as a conflict while the older is valid.
      await writeFile(
        path.join(manifests, 'example.com', 'zz-younger.yaml'),
        recordSet('ns1-younger', 'ns1', 'A', ['203.0.113.99']),
      );
      await waitFor(async () =>
        condition(await resources(live), 'DNSRecordSet', 'dns/ns1-younger', 'Accepted')?.reason === 'Conflict'
          ? true
          : undefined,
      );
      const serial = soaSerial((await dig(live.dnsPort, 'example.com', 'SOA')).answer);

      const file = path.join(manifests, 'example.com', 'records.yaml');
      const original = await readFile(file, 'utf8');
      await writeFile(file, original.replace('records: ["192.0.2.53"]', 'records: ["192.0.2.531"]'));
      const accepted = await waitFor(async () => {
        const c = condition(await resources(live), 'DNSRecordSet', 'dns/nameservers-a', 'Accepted');
        return c?.status === 'False' ? c : undefined;
      });
      assert.equal(accepted.value.reason, 'Invalid');
      assert.match(accepted.value.message, /spec\.records\[0\] "192\.0\.2\.531"/);
      assert.match(accepted.value.message, /last valid version/);
      const body = await resources(live);
      const problem = body.problems.find((p) => p.object === 'DNSRecordSet dns/nameservers-a');
      assert.ok(problem, JSON.stringify(body.problems));
      assert.equal(problem.path, 'spec.records[0]');
      assert.equal(problem.file, file);
      assert.equal(condition(body, 'DNSRecordSet', 'dns/ns1-younger', 'Accepted')?.reason, 'Conflict');
      // Served as before: the same answer and the same serial (nothing changed in the zone).
      assert.deepEqual(await answers(live, 'ns1.example.com', 'A'), ['192.0.2.53']);
      assert.equal(soaSerial((await dig(live.dnsPort, 'example.com', 'SOA')).answer), serial);

      // Fixed again: accepted again, the younger one still refused.
      await writeFile(file, original.replace('records: ["192.0.2.53"]', 'records: ["192.0.2.54"]'));
      await waitFor(async () =>
        (await answers(live, 'ns1.example.com', 'A')).join() === '192.0.2.54' ? true : undefined,
      );
      const after = await resources(live);
      assert.equal(condition(after, 'DNSRecordSet', 'dns/nameservers-a', 'Accepted')?.status, 'True');
      assert.equal(condition(after, 'DNSRecordSet', 'dns/ns1-younger', 'Accepted')?.reason, 'Conflict');
      // Without DNS threads the main thread answers: no memory-reducing collection pauses it.
      assert.doesNotMatch(live.log(), /gave memory back/);
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });
});

describe('folder mode: what serve accepted survives a restart with the same --state-dir', () => {
  test('kept versions and an immutable domainName are remembered; validate --state-dir agrees', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state);
      const first = serve;
      const records = path.join(manifests, 'example.com', 'records.yaml');
      const zone = path.join(manifests, 'example.com', 'zone.yaml');
      const recordsText = await readFile(records, 'utf8');
      const zoneText = await readFile(zone, 'utf8');
      // A schema error on one record set, a bad value on another, and a domainName change.
      await writeFile(
        records,
        recordsText
          .replace('records: ["192.0.2.53"]', 'records: ["192.0.2.531"]')
          .replace(/(name: mail\n {2}type: A\n)/, '$1  ttl: 0\n'),
      );
      assert.match(zoneText, /domainName: example\.com\n/);
      await writeFile(zone, zoneText.replace('domainName: example.com\n', 'domainName: example.org\n'));
      await waitFor(async () => {
        const body = await resources(first);
        const codes = new Set(body.problems.map((p) => p.code));
        return codes.has('IMMUTABLE') && codes.has('TOO_SMALL') && codes.has('INVALID_RDATA')
          ? true
          : undefined;
      });
      const serial = soaSerial((await dig(first.dnsPort, 'example.com', 'SOA')).answer);
      assert.deepEqual(await answers(first, 'mail.example.com', 'A'), ['192.0.2.25']);
      await first.stop();

      serve = await startServe(manifests, state);
      const second = serve;
      assert.deepEqual(await answers(second, 'ns1.example.com', 'A'), ['192.0.2.53'], 'kept value');
      assert.deepEqual(await answers(second, 'mail.example.com', 'A'), ['192.0.2.25'], 'kept schema');
      assert.equal(
        soaSerial((await dig(second.dnsPort, 'example.com', 'SOA')).answer),
        serial,
        'the same content under the same serial',
      );
      assert.equal((await dig(second.dnsPort, 'www.example.org', 'A')).status, 'REFUSED');
      const body = await resources(second);
      const immutable = body.problems.find((p) => p.code === 'IMMUTABLE');
      assert.ok(immutable, JSON.stringify(body.problems));
      assert.equal(immutable.file, zone);
      assert.equal(immutable.path, 'spec.domainName');
      assert.equal(condition(body, 'DNSZone', 'dns/example-com', 'Accepted')?.reason, 'Invalid');
      assert.equal(condition(body, 'DNSRecordSet', 'dns/mail-a', 'Accepted')?.reason, 'Invalid');
      await second.stop();

      // validate with the state folder tells the same story; without it, it cannot know.
      const withState = await validate('--state-dir', state, manifests);
      assert.equal(withState.code, 1, withState.stdout);
      assert.match(
        withState.stdout,
        /zone\.yaml:\d+ \(document 1\): DNSZone dns\/example-com spec\.domainName: .*immutable/,
      );
      assert.match(withState.stdout, /DNSRecordSet dns\/nameservers-a spec\.records\[0\]: .*192\.0\.2\.531/);
      assert.match(withState.stdout, /DNSRecordSet dns\/mail-a spec\.ttl: /);
      assert.match(withState.stdout, /serve keeps the last valid version/);
      const without = await validate(manifests);
      assert.doesNotMatch(without.stdout, /immutable/);
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });
});

describe('folder mode: a ConfigMap volume (symbolic links)', () => {
  test('the kubelet layout is loaded and served, and a ..data swap reloads', async () => {
    const volume = await tempDir('configmap');
    const state = await tempDir('state');
    const examples = await copyExamples();
    let serve: ServeProcess | undefined;
    // A ConfigMap is flat: one key per file.
    const files: Record<string, string> = {};
    for (const [key, file] of [
      ['class.yaml', '00-builtin-class.yaml'],
      ['zone.yaml', 'example.com/zone.yaml'],
      ['www.yaml', 'example.com/www.yaml'],
      ['records.yaml', 'example.com/records.yaml'],
    ] as const)
      files[key] = await readFile(path.join(examples, file), 'utf8');
    /** What the kubelet's atomic writer does: a new timestamped folder, ..data_tmp renamed over ..data. */
    const publish = async (version: number, content: Record<string, string>) => {
      const folder = `..2026_01_0${version}_12_00_00.00000000${version}`;
      await mkdir(path.join(volume, folder));
      for (const [key, text] of Object.entries(content))
        await writeFile(path.join(volume, folder, key), text);
      await symlink(folder, path.join(volume, '..data_tmp'));
      await rename(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
      for (const key of Object.keys(content))
        await symlink(path.join('..data', key), path.join(volume, key)).catch(() => {});
      for (const entry of await readdir(volume))
        if (entry.startsWith('..2026') && entry !== folder)
          await rm(path.join(volume, entry), { recursive: true });
    };
    try {
      await publish(1, files);
      serve = await startServe(volume, state);
      const live = serve;
      assert.deepEqual((await answers(live, 'www.example.com', 'A')).sort(), ['192.0.2.10', '192.0.2.11']);
      assert.equal((await fetch(`${live.httpUrl}/readyz`)).status, 200);
      await publish(2, {
        ...files,
        'www.yaml': files['www.yaml']!.replace('["192.0.2.10", "192.0.2.11"]', '["192.0.2.12"]'),
      });
      await waitFor(async () =>
        (await answers(live, 'www.example.com', 'A')).join() === '192.0.2.12' ? true : undefined,
      );
    } finally {
      await serve?.stop();
      await removeAll(volume, state, examples);
    }
  });
});

describe('folder mode: parsing a large manifest never stalls DNS', () => {
  test('queries sent while a large manifest is parsed are all answered', async (t) => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state);
      const live = serve;
      // About 11 MB of record sets whose labels are shared through a YAML anchor: costly to parse,
      // cheap to serve (7,000 record sets).
      const count = 7000;
      const labels = Array.from({ length: 30 }, (_, j) => `    team.example.com/label-${j}: value-${j}`).join(
        '\n',
      );
      const docs: string[] = [];
      for (let i = 0; i < count; i++)
        docs.push(
          `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata:\n  name: big-${i}\n  namespace: dns\n  labels: &labels\n${labels}\n  annotations: *labels\nspec:\n  zoneRef: {name: example-com}\n  name: host${i}.big\n  type: A\n  records: ["192.0.2.${i % 250}"]\n`,
        );
      const query = buildQuery({ name: 'www.example.com', type: 1 });
      /** A resolver's patience: three tries. */
      const ask = async () => {
        for (let attempt = 0; attempt < 3; attempt++) {
          const r = await exchange(live.dnsPort, query, { timeoutMs: 1500 });
          if (r.message) return true;
        }
        return false;
      };
      let done = false;
      let asked = 0;
      let unanswered = 0;
      const last = buildQuery({ name: `host${count - 1}.big.example.com`, type: 1 });
      const load = (async () => {
        try {
          await writeFile(path.join(manifests, 'large.yaml'), docs.join('---\n'));
          await waitFor(
            async () => ((await exchange(live.dnsPort, last)).message?.answers.length ? true : undefined),
            120_000,
            200,
          );
        } finally {
          done = true;
        }
      })();
      while (!done) {
        asked++;
        if (!(await ask())) unanswered++;
        await new Promise((r) => setTimeout(r, 20));
      }
      await load;
      t.diagnostic(`${asked} queries while the file was loaded`);
      assert.ok(asked > 10, `${asked} queries`);
      assert.equal(unanswered, 0, `${unanswered} of ${asked} queries went unanswered`);
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });

  test('a file above --max-manifest-bytes is not read, with a clear problem; what it defined keeps serving', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state, ['--max-manifest-bytes', '8KiB']);
      const live = serve;
      const file = path.join(manifests, 'example.com', 'www.yaml');
      const text = await readFile(file, 'utf8');
      await writeFile(file, `${text.replace('"192.0.2.11"', '"192.0.2.12"')}\n#${'x'.repeat(9000)}\n`);
      const problem = await waitFor(async () =>
        (await resources(live)).problems.find((p) => p.code === 'FILE_TOO_LARGE'),
      );
      assert.equal(problem.value.file, file);
      assert.match(
        problem.value.message,
        /^the file is \d+ bytes, above the limit of 8192 bytes per manifest file; split it into smaller files, or raise the limit with --max-manifest-bytes$/,
      );
      assert.deepEqual((await answers(live, 'www.example.com', 'A')).sort(), ['192.0.2.10', '192.0.2.11']);
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });
});

describe('folder mode: health endpoints', () => {
  test('a missing folder: not ready, a listed problem, a metric; ready once it exists', async () => {
    const parent = await tempDir('missing');
    const state = await tempDir('state');
    const manifests = path.join(parent, 'manifests');
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(manifests, state);
      const live = serve;
      const readyz = await fetch(`${live.httpUrl}/readyz`);
      assert.equal(readyz.status, 503);
      assert.match(await readyz.text(), /cannot read the manifests folder: ENOENT/);
      const body = await resources(live);
      assert.equal(body.problems[0]?.code, 'FOLDER_UNREADABLE');
      assert.equal(body.problems[0]?.file, manifests);
      assert.match(
        await (await fetch(`${live.httpUrl}/metrics`)).text(),
        /^zonekeeper_manifest_folder_readable 0$/m,
      );
      await mkdir(manifests);
      await writeFile(
        path.join(manifests, 'class.yaml'),
        await readFile(path.join(ROOT, 'examples', '00-builtin-class.yaml'), 'utf8'),
      );
      await waitFor(async () => ((await fetch(`${live.httpUrl}/readyz`)).status === 200 ? true : undefined));
      assert.match(
        await (await fetch(`${live.httpUrl}/metrics`)).text(),
        /^zonekeeper_manifest_folder_readable 1$/m,
      );
    } finally {
      await serve?.stop();
      await removeAll(parent, state);
    }
  });

  test('problems (record values included) are counted at start, logged once, and resources counted by readiness', async () => {
    const manifests = await copyExamples();
    const state = await tempDir('state');
    let serve: ServeProcess | undefined;
    try {
      const file = path.join(manifests, 'example.com', 'records.yaml');
      await writeFile(
        file,
        (await readFile(file, 'utf8')).replace('records: ["192.0.2.53"]', 'records: ["192.0.2.531"]'),
      );
      serve = await startServe(manifests, state);
      const live = serve;
      assert.match(live.log(), / problems=1\b/);
      const metrics = await (await fetch(`${live.httpUrl}/metrics`)).text();
      assert.match(metrics, /^zonekeeper_manifest_problems 1$/m);
      assert.match(metrics, /^zonekeeper_resources\{kind="DNSZone",ready="true"\} 3$/m);
      assert.match(metrics, /^zonekeeper_resources\{kind="DNSRecordSet",ready="false"\} 0$/m);
      assert.match(metrics, /^zonekeeper_resources\{kind="DNSZoneClass",ready="true"\} 1$/m);
      // Seen by a few rescans, logged once.
      await new Promise((r) => setTimeout(r, 11_000));
      const logged = live
        .log()
        .split('\n')
        .filter((line) => line.includes('192.0.2.531'));
      assert.equal(logged.length, 1, logged.join('\n'));
    } finally {
      await serve?.stop();
      await removeAll(manifests, state);
    }
  });
});
