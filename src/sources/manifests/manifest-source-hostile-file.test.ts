/**
 * One file's content must not stop a folder from loading: whatever a writer of one manifest file puts
 * in it (below the size limit), the other files' objects load and later edits apply, the file's own
 * objects keep their last valid versions, and its problems stay few enough to log.
 */
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
import { LocalManifestParser } from './manifest-parser.ts';
import { MAX_FILE_PROBLEMS, ManifestSource, type ManifestSourceOptions } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

const record = (name: string, value: string) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\n` +
  `spec:\n  zoneRef: {name: z}\n  name: ${name}\n  type: A\n  records: ["${value}"]\n`;
const zone =
  'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: z, namespace: dns}\n' +
  'spec:\n  domainName: example.com\n  className: builtin\n';

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

test("a file whose check throws fails alone: its objects keep their last valid versions, other files' edits apply", async () => {
  // A front door (a module a platform team may add) with a defect: its admission throws once armed.
  let armed = false;
  const door = {
    ...dnsEndpointFrontDoor,
    admit: () => {
      if (armed) throw new Error('the admission met something it did not expect');
      return [];
    },
  } as typeof dnsEndpointFrontDoor;
  const frontDoors = new FrontDoors([door]);
  const endpoint = (target: string) =>
    'apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: e, namespace: dns}\n' +
    `spec:\n  endpoints:\n  - {dnsName: e.example.com, recordType: A, targets: ["${target}"]}\n`;
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
  const ep = path.join(dir, 'b.yaml');
  await writeFile(ep, endpoint('192.0.2.7'));
  const s = await source({ frontDoors, parser: new LocalManifestParser(frontDoors) });
  await s.reload();
  assert.deepEqual(errors, []);
  const targets = () =>
    (store.getForeign(frontDoorId(door), 'dns/e')?.spec as { endpoints: { targets: string[] }[] } | undefined)
      ?.endpoints[0]?.targets;
  assert.deepEqual(targets(), ['192.0.2.7']);

  armed = true;
  await writeFile(ep, endpoint('192.0.2.8'));
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.9')}`);
  await s.reload();
  assert.deepEqual(errors, [], 'the reload did not fail');
  assert.equal(served('x'), '192.0.2.9');
  assert.deepEqual(targets(), ['192.0.2.7'], 'the endpoint keeps its last valid version');
  const problems = s.problems().filter((p) => p.file === ep);
  assert.deepEqual(
    problems.map((p) => p.code),
    ['FILE_NOT_PARSED', 'KEPT_PREVIOUS'],
  );
  assert.match(
    problems[0]!.message,
    /the admission met something it did not expect; the objects it defined keep/,
  );
  assert.ok(s.keptObjects().has(`${frontDoorId(door)}/dns/e`));

  // Mended (here: the door no longer throws), the file's new version applies.
  armed = false;
  await writeFile(ep, endpoint('192.0.2.10'));
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
  const door = {
    ...dnsEndpointFrontDoor,
    admit: (_object: unknown, old: unknown) => {
      if (armed && old !== undefined) throw new Error('the transition check met something it did not expect');
      return [];
    },
  } as typeof dnsEndpointFrontDoor;
  const frontDoors = new FrontDoors([door]);
  const endpoint = (target: string) =>
    'apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: e, namespace: dns}\n' +
    `spec:\n  endpoints:\n  - {dnsName: e.example.com, recordType: A, targets: ["${target}"]}\n`;
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.1')}`);
  const ep = path.join(dir, 'b.yaml');
  await writeFile(ep, endpoint('192.0.2.7'));
  const s = await source({ frontDoors, parser: new LocalManifestParser(frontDoors) });
  await s.reload();
  const targets = () =>
    (store.getForeign(frontDoorId(door), 'dns/e')?.spec as { endpoints: { targets: string[] }[] } | undefined)
      ?.endpoints[0]?.targets;
  assert.deepEqual(targets(), ['192.0.2.7']);

  armed = true;
  await writeFile(ep, endpoint('192.0.2.8'));
  await writeFile(path.join(dir, 'a.yaml'), `${zone}---\n${record('x', '192.0.2.9')}`);
  await s.reload();
  assert.deepEqual(errors, [], 'the reload did not fail');
  assert.equal(served('x'), '192.0.2.9');
  assert.deepEqual(targets(), ['192.0.2.7'], 'the endpoint keeps its last valid version');
  const [problem, ...rest] = s.problems().filter((p) => p.file === ep);
  assert.deepEqual(rest, []);
  assert.equal(problem?.code, 'CHECK_FAILED');
  assert.equal(problem?.object, 'DNSEndpoint dns/e');
  assert.match(
    problem!.message,
    /the transition check met something it did not expect; it keeps its last valid version/,
  );
  assert.ok(s.keptObjects().has(`${frontDoorId(door)}/dns/e`));
});
