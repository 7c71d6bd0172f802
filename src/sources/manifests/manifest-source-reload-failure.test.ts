import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { dnsEndpointFrontDoor } from '../../api/frontdoors/externaldns/index.ts';
import { FrontDoors, frontDoorId } from '../../api/frontdoors/index.ts';
import type { DNSRecordSet } from '../../api/index.ts';
import { MAX_PROBLEMS } from '../../api/schema.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { LocalManifestParser, type ManifestParser } from './manifest-parser.ts';
import { MAX_FILE_PROBLEMS, ManifestSource, type ManifestSourceOptions } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, value: string) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\n` +
  `spec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: A\n  records: ["${value}"]\n`;
const zone =
  'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: z, namespace: dns}\n' +
  'spec:\n  domainName: example.com\n  className: builtin\n';

test('a reload that fails after it took a changed file: the next reload applies the change, though the file did not change again', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-reload-failure-'));
  try {
    await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
    await writeFile(path.join(dir, 'b.yaml'), record('y', '192.0.2.1'));
    const inner = new LocalManifestParser();
    let fail = false;
    // A problem's line asked of a parse thread that stopped (once).
    const parser: ManifestParser = {
      parse: (file, mode) => inner.parse(file, mode),
      locate: async (token, requests) => {
        if (fail) {
          fail = false;
          throw new Error('the parse thread stopped');
        }
        return inner.locate(token, requests);
      },
      release: (token) => inner.release(token),
      close: () => inner.close(),
    };
    const store = new MemoryStore();
    const state = await StateStore.open(undefined);
    const errors: string[] = [];
    const source = new ManifestSource({
      dir,
      store,
      state,
      parser,
      settleMs: 3_600_000,
      now: () => new Date(0),
      log: (_level: string, message: string) => errors.push(message),
    } as never);
    await source.reload();
    assert.deepEqual((store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined)?.spec.records, [
      '192.0.2.1',
    ]);
    // a.yaml changes; b.yaml gets an invalid value, whose line is asked for and fails once.
    await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.22')}`);
    await writeFile(path.join(dir, 'b.yaml'), record('y', '192.0.2.999'));
    fail = true;
    await source.reload();
    assert.equal(fail, false, 'the locate failed');
    assert.match(errors.join('\n'), /the parse thread stopped/);
    // Until a reload succeeds, the failure is said (serve is not ready meanwhile).
    assert.match(source.reloadFailure() ?? '', /^reading .*: the parse thread stopped$/);
    // Nothing changed on disk since (the folder's periodic rescan runs this reload).
    await source.reload();
    assert.deepEqual((store.get('DNSRecordSet', 'dns/x') as DNSRecordSet | undefined)?.spec.records, [
      '192.0.2.22',
    ]);
    assert.equal(source.reloadFailure(), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// One file's content must not stop a folder from loading: whatever a writer of one manifest file puts
// in it (below the size limit), the other files' objects load and later edits apply, the file's own
// objects keep their last valid versions, and its problems stay few enough to log.

let dir: string;
let store: MemoryStore;
let errors: string[];
let warnings: number;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-hostile-file-'));
  store = new MemoryStore();
  errors = [];
  warnings = 0;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function source(options: Partial<ManifestSourceOptions> = {}): Promise<ManifestSource> {
  return new ManifestSource({
    dir,
    store,
    state: await StateStore.open(undefined),
    settleMs: 0,
    now: () => new Date(0),
    log: (level, message) => {
      if (level === 'error') errors.push(message);
      if (level === 'warn') warnings++;
    },
    ...options,
  });
}

const served = (name: string) =>
  (store.get('DNSRecordSet', `dns/${name}`) as DNSRecordSet | undefined)?.spec.records.join();

test('a document with 200,000 invalid label keys is refused with its capped problems; the folder loads', async () => {
  // Each key's problem was passed as an argument (`push(...list)`): past some 100,000 the stack overflowed
  // and every reload of the folder failed on it.
  const labels = Array.from({ length: 200_000 }, (_, i) => `    '-bad${i}': x\n`).join('');
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
  await writeFile(
    path.join(dir, 'b.yaml'),
    `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata:\n  name: y\n  namespace: dns\n  labels:\n${labels}` +
      'spec:\n  zoneRef: {name: z}\n  name: y\n  type: A\n  records: ["192.0.2.2"]\n',
  );
  const s = await source();
  await s.reload();
  assert.deepEqual(errors, []);
  assert.equal(served('x'), '192.0.2.1');
  assert.equal(served('y'), undefined);
  const problems = s.problems().filter((p) => p.file.endsWith('b.yaml'));
  assert.equal(problems.length, MAX_PROBLEMS + 1);
  assert.equal(problems[0]?.code, 'INVALID_KEY');
  assert.match(problems.at(-1)!.message, /^199900 more problems not listed/);
});

test("a file of 150,000 small invalid documents: its problems are capped, the other files' edits apply", async () => {
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
  const bad = path.join(dir, 'b.yaml');
  await writeFile(bad, `${record('y', '192.0.2.2')}---\n${'a: 1\n---\n'.repeat(150_000)}`);
  const s = await source();
  await s.reload();
  assert.deepEqual(errors, []);
  assert.equal(served('x'), '192.0.2.1');
  // The file's valid document is taken; its anonymous invalid ones are reported, at most so many.
  assert.equal(served('y'), '192.0.2.2');
  const problems = s.problems().filter((p) => p.file === bad);
  assert.equal(problems.length, MAX_FILE_PROBLEMS + 1);
  const last = problems.at(-1)!;
  assert.equal(last.code, 'TOO_MANY_PROBLEMS');
  // Two problems a document (apiVersion and kind), the first MAX_FILE_PROBLEMS listed.
  assert.equal(
    last.message,
    `${300_000 - MAX_FILE_PROBLEMS} more problems in this file not listed; fix the ones above first`,
  );
  assert.ok(warnings <= MAX_FILE_PROBLEMS + 1, `${warnings} warnings logged`);

  // An edit in another file applies: the reload does not fail on the bad file.
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.9')}`);
  await s.reload();
  assert.deepEqual(errors, []);
  assert.equal(served('x'), '192.0.2.9');
});

/**
 * A folder of a zone with record set x (a.yaml) and the DNSEndpoint dns/e (b.yaml) read through the
 * ExternalDNS door with `check` as its admission (a door's defect when it throws), loaded once.
 */
async function folderWithDoor(check: (old: unknown) => void) {
  const door = {
    ...dnsEndpointFrontDoor,
    admit: (_object: unknown, old: unknown) => {
      check(old);
      return [];
    },
  } as typeof dnsEndpointFrontDoor;
  const frontDoors = new FrontDoors([door]);
  const ep = path.join(dir, 'b.yaml');
  const endpoint = (target: string) =>
    writeFile(
      ep,
      'apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: e, namespace: dns}\n' +
        `spec:\n  endpoints:\n  - {dnsName: e.example.com, recordType: A, targets: ["${target}"]}\n`,
    );
  const x = (value: string) => writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', value)}`);
  await x('192.0.2.1');
  await endpoint('192.0.2.7');
  const s = await source({ frontDoors, parser: new LocalManifestParser(frontDoors) });
  await s.reload();
  assert.deepEqual(errors, []);
  const targets = () =>
    (store.getForeign(frontDoorId(door), 'dns/e')?.spec as { endpoints: { targets: string[] }[] } | undefined)
      ?.endpoints[0]?.targets;
  assert.deepEqual(targets(), ['192.0.2.7']);
  /** Both files edited and read again: the other file's edit applies, the endpoint keeps its version. */
  const editBoth = async () => {
    await endpoint('192.0.2.8');
    await x('192.0.2.9');
    await s.reload();
    assert.deepEqual(errors, [], 'the reload did not fail');
    assert.equal(served('x'), '192.0.2.9');
    assert.deepEqual(targets(), ['192.0.2.7'], 'the endpoint keeps its last valid version');
  };
  return { s, ep, endpoint, editBoth, targets, id: `${frontDoorId(door)}/dns/e` };
}

test("a file whose check throws fails alone: its objects keep their last valid versions, other files' edits apply", async () => {
  // A front door (a module a platform team may add) with a defect: its admission throws once armed.
  let armed = false;
  const { s, ep, endpoint, editBoth, targets, id } = await folderWithDoor(() => {
    if (armed) throw new Error('the admission met something it did not expect');
  });
  armed = true;
  await editBoth();
  const problems = s.problems().filter((p) => p.file === ep);
  assert.deepEqual(
    problems.map((p) => p.code),
    ['FILE_NOT_PARSED', 'KEPT_PREVIOUS'],
  );
  assert.match(
    problems[0]!.message,
    /the admission met something it did not expect; the objects it defined keep/,
  );
  assert.ok(s.keptObjects().has(id));

  // Mended (here: the door no longer throws), the file's new version applies.
  armed = false;
  await endpoint('192.0.2.10');
  await s.reload();
  assert.deepEqual(targets(), ['192.0.2.10']);
  assert.deepEqual(
    s.problems().filter((p) => p.file === ep),
    [],
  );
});

test('an object whose check against its served version throws is refused alone; other edits apply', async () => {
  // The door's admission throws only where the version served is given: on the main thread's check.
  let armed = false;
  const { s, ep, editBoth, id } = await folderWithDoor((old) => {
    if (armed && old !== undefined) throw new Error('the transition check met something it did not expect');
  });
  armed = true;
  await editBoth();
  const [problem, ...rest] = s.problems().filter((p) => p.file === ep);
  assert.deepEqual(rest, []);
  assert.equal(problem?.code, 'CHECK_FAILED');
  assert.equal(problem?.object, 'DNSEndpoint dns/e');
  assert.match(
    problem!.message,
    /the transition check met something it did not expect; it keeps its last valid version/,
  );
  assert.ok(s.keptObjects().has(id));
});

test('a copy of a file is reported with at most MAX_FILE_PROBLEMS duplicates and one line counting the rest', async () => {
  const many = Array.from({ length: MAX_FILE_PROBLEMS + 200 }, (_, i) => record(`r${i}`, '192.0.2.1')).join(
    '---\n',
  );
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${many}`);
  await writeFile(path.join(dir, 'b.yaml'), many);
  const s = await source();
  await s.reload();
  assert.deepEqual(errors, []);
  assert.equal(served('r0'), '192.0.2.1');
  const copy = s.problems().filter((p) => p.file.endsWith('b.yaml'));
  assert.equal(copy.length, MAX_FILE_PROBLEMS + 1);
  assert.ok(copy.slice(0, -1).every((p) => p.code === 'DUPLICATE'));
  assert.deepEqual(copy.at(-1), {
    file: path.join(dir, 'b.yaml'),
    code: 'TOO_MANY_PROBLEMS',
    message: '200 more objects of this file also defined in other files not listed; fix the ones above first',
  });
});
