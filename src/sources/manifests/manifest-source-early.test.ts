import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { KINDS, type Resource } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { RecordTable } from '../../zones/record-table.ts';
import { FileDefinitions } from './file-definitions.ts';
import { FolderHold } from './folder-hold.ts';
import {
  DOCUMENTS_PER_MESSAGE,
  decodeDocuments,
  encodeDocuments,
  LocalManifestParser,
  type LocateRequest,
  type ManifestParser,
  type ParsedDocument,
  parseManifestFileToSend,
} from './manifest-parser.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateStore } from './state-file.ts';

// A fresh first load takes each file as it is parsed (ADR 0029); the batch path (every file taken
// after the last parse) is what it must give exactly: each case loads the same folder both ways.

const record = (name: string, value: string, type = 'A', zoneRef = true) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\nmetadata: {name: ${name}, namespace: dns}\nspec:\n${zoneRef ? '  zoneRef: {name: z}\n' : ''}  name: ${name}\n  type: ${type}\n  records: ["${value}"]\n`;
const zone = (name: string, domain: string) =>
  `apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSZone\nmetadata: {name: ${name}, namespace: dns}\nspec:\n  domainName: ${domain}\n  className: builtin\n`;
const docs = (...list: string[]) => list.join('---\n');
/** A record set of `record`'s with more in its metadata (`labels: {a: b}`, `annotations: {c: d}`). */
const recordWith = (metadata: string, name: string, value: string) =>
  record(name, value).replace('namespace: dns}', `namespace: dns, ${metadata}}`);

/** A `during` hook per load: `act` runs when `name`'s parse is first asked for, not again. */
const onceAt = (name: string, act: () => Promise<unknown>) => () => {
  let done = false;
  return async (file: string) => {
    if (file !== name || done) return;
    done = true;
    await act();
  };
};

/**
 * The parser on this thread, holding `name`'s parse back until `ready` (up to ten seconds, however
 * loaded the machine), then running `then` before it parses.
 */
const holdingAt = (name: string, ready: () => boolean, then: () => unknown): ManifestParser => {
  const inner = new LocalManifestParser();
  return {
    parse: async (file, maxBytes) => {
      if (path.basename(file) === name) {
        const until = performance.now() + 10_000;
        while (!ready() && performance.now() < until) await turn();
        await then();
      }
      return inner.parse(file, maxBytes);
    },
    locate: (token, requests) => inner.locate(token, requests),
    release: (token) => inner.release(token),
    close: () => inner.close(),
  };
};

/**
 * The parse on this thread as a parse thread sends it and the main thread receives it: usual record
 * sets as their values, in messages of `DOCUMENTS_PER_MESSAGE` (`encodeDocuments`), decoded with
 * their ids and made in the source's shape (`decodeDocuments`: `compact`, `checked`, `ids`).
 */
class WireParser implements ManifestParser {
  private next = 0;
  /** Every file said to have distinct ids, whatever its messages said (no parse thread does). */
  private readonly sayDistinct: boolean;

  constructor(sayDistinct = false) {
    this.sayDistinct = sayDistinct;
  }

  private readonly held = new Map<number, (requests: readonly LocateRequest[]) => (number | undefined)[]>();

  async parse(file: string, maxBytes: number) {
    const { parsed, locate } = await parseManifestFileToSend(file, maxBytes);
    const documents: ParsedDocument[] = [];
    const compact: boolean[] = [];
    const checked: boolean[] = [];
    const ids: (string | undefined)[] = [];
    const whole = { distinct: false };
    const n = parsed.documents.length;
    for (let i = 0; i < n; i += DOCUMENTS_PER_MESSAGE) {
      const json = encodeDocuments(
        parsed.documents,
        parsed.checked,
        i,
        Math.min(i + DOCUMENTS_PER_MESSAGE, n),
      );
      decodeDocuments(json, documents, compact, checked, ids, whole);
    }
    const token = ++this.next;
    if (locate) this.held.set(token, locate);
    return {
      documents,
      compact,
      checked,
      ids,
      distinct: this.sayDistinct || whole.distinct,
      fileErrors: parsed.fileErrors,
      token,
    };
  }

  async locate(token: number, requests: readonly LocateRequest[]) {
    const locate = this.held.get(token);
    return locate ? locate(requests) : requests.map(() => undefined);
  }

  release(token: number): void {
    this.held.delete(token);
  }

  async close(): Promise<void> {
    this.held.clear();
  }
}

/** A domain long enough that a relative name of two full labels under it is too long (RFC 1035 §2.3.4). */
const LONG = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.org`;
const TWO_LABELS = `${'d'.repeat(63)}.${'e'.repeat(63)}`;

/** A run's snapshot read: the store's record sets by name, and the state's lines by id. */
function readSnapshot(run: Run): { named: (name: string) => Resource; held: Map<string, string> } {
  const snapshot = run.snapshot() as { store: string[][]; state: [string, string][] };
  const stored = snapshot.store.flat().map((o) => JSON.parse(o) as Resource);
  return {
    named: (name) => stored.find((o) => o.kind === 'DNSRecordSet' && o.metadata.name === name)!,
    held: new Map(snapshot.state),
  };
}

interface Run {
  /** `takesEarly`'s answers, by file name, in the order asked. */
  asked: [string, boolean][];
  /** Files parsed, in order (a file read again appears twice). */
  parsed: string[];
  /** Whether the first file's objects were defined before the last file's parse came back. */
  earlyBeforeLast: boolean;
  /** Objects in the store (of every kind) and the state when the last file's parse came back. */
  appliedBeforeLast: { store: number; state: number };
  errors: string[];
  snapshot: () => unknown;
  source: ManifestSource;
  /** The keys the shared record table was asked for (`slotOf`), in order, with `table`. */
  lookups: string[];
}

describe('folder mode: a fresh first load takes each file as it is parsed', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-early-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const write = async (files: Record<string, string>) => {
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), text);
    }
  };

  /**
   * Loads the folder into an empty store and state; `batch` takes every file after the last parse.
   * `probe` is an object of the first file: the last file's parse waits (up to ten seconds) for it
   * to be defined, which only taking files early does.
   */
  const load = async (
    options: {
      batch: boolean;
      probe: string;
      last: string;
      /** Documents received as from a parse thread (`WireParser`). */
      wire?: boolean;
      /** With `wire`: every file said to have distinct ids (`WireParser`'s `sayDistinct`). */
      sayDistinct?: boolean;
      /** Called with each file as its parse is asked for; may change the file or throw. */
      during?: (file: string) => Promise<void>;
      /** Called before each request for problems' lines; may throw. */
      locating?: () => Promise<void>;
      /** The store and the state share a record table, as `serve` wires them. */
      table?: boolean;
    },
    files: Record<string, string>,
  ): Promise<Run> => {
    await write(files);
    const inner = options.wire ? new WireParser(options.sayDistinct) : new LocalManifestParser();
    const run: Run = {
      asked: [],
      parsed: [],
      earlyBeforeLast: false,
      appliedBeforeLast: { store: 0, state: 0 },
      errors: [],
      snapshot: () => undefined,
      source: undefined as unknown as ManifestSource,
      lookups: [],
    };
    const parser: ManifestParser = {
      parse: async (file, maxBytes) => {
        run.parsed.push(path.basename(file));
        const parsed = await inner.parse(file, maxBytes);
        if (path.basename(file) === options.last) {
          // Early, the first file is taken while this parse is held back, however loaded the machine
          // (its stat and checks take turns of the event loop): waited for up to ten seconds. The
          // batch path takes nothing before this parse returns, so a few turns show it.
          const until = performance.now() + (options.batch ? 0 : 10_000);
          for (let i = 0; !source.definitionOf(options.probe); i++) {
            if (i >= 200 && performance.now() > until) break;
            await turn();
          }
          run.earlyBeforeLast = source.definitionOf(options.probe) !== undefined;
          run.appliedBeforeLast = {
            store: KINDS.reduce((n, kind) => n + store.count(kind), 0),
            state: [...state.objectIds()].length,
          };
        }
        await options.during?.(path.basename(file));
        return parsed;
      },
      locate: async (token, requests) => {
        await options.locating?.();
        return inner.locate(token, requests);
      },
      release: (token) => inner.release(token),
      close: () => inner.close(),
    };
    const table = options.table ? new RecordTable() : undefined;
    if (table) {
      const slotOf = table.slotOf.bind(table);
      table.slotOf = (key) => {
        run.lookups.push(key);
        return slotOf(key);
      };
    }
    const store = new MemoryStore(undefined, table ? { recordSets: table } : {});
    const state = await StateStore.open(undefined, table ? { recordTable: table } : {});
    const source = new ManifestSource({
      dir,
      store,
      state,
      parser,
      settleMs: 3_600_000,
      now: () => new Date(0),
      log: (level, message) => {
        if (level === 'error') run.errors.push(message);
      },
      folderHold: new FolderHold({ windowMs: 60_000, confirmations: () => [], confirmHint: () => '' }),
    });
    run.source = source;
    const inside = source as unknown as { takesEarly: (...args: unknown[]) => boolean };
    const takesEarly = inside.takesEarly.bind(source);
    inside.takesEarly = (...args) => {
      const answer = options.batch ? false : takesEarly(...args);
      run.asked.push([path.basename((args[0] as { file: string }).file), answer]);
      return answer;
    };
    run.snapshot = () => {
      const ids = [...state.objectIds()];
      return {
        store: KINDS.map((kind) => store.list(kind).map((o) => JSON.stringify(o))),
        state: ids.map((id) => [id, JSON.stringify(state.object(id))]),
        files: [...state.loadedFiles()],
        problems: source.problems().map((p) => ({ ...p })),
        kept: [...source.keptObjects()],
        refused: [...source.refusedObjects()],
        definitions: ids.map((id) => [id, source.definitionOf(id)]),
        holds: [...source.heldRemovals],
      };
    };
    await source.reload();
    return run;
  };

  const bothWays = async (
    files: Record<string, string>,
    options: { probe: string; last: string; during?: () => (file: string) => Promise<void> },
  ) => {
    const batch = await load({ ...options, batch: true, during: options.during?.() }, files);
    const early = await load({ ...options, batch: false, during: options.during?.() }, files);
    assert.equal(batch.earlyBeforeLast, false, 'the batch path takes nothing before the last parse');
    assert.deepEqual(batch.appliedBeforeLast, { store: 0, state: 0 }, 'nor applies anything');
    assert.deepEqual(early.snapshot(), batch.snapshot());
    // The same with the documents as a parse thread sends them (ids made on receipt, record sets in
    // the source's shape), taken early.
    const wired = await load({ ...options, batch: false, wire: true, during: options.during?.() }, files);
    assert.deepEqual(wired.snapshot(), batch.snapshot());
    assert.equal(wired.earlyBeforeLast, early.earlyBeforeLast);
    // The same with the store and the state sharing a record table, as `serve` wires them (the state
    // then gives its record sets after its other objects: compared in id order).
    const tabled = await load(
      { ...options, batch: false, wire: true, table: true, during: options.during?.() },
      files,
    );
    const byId = (run: Run) => {
      const snapshot = run.snapshot() as Record<string, unknown[]>;
      for (const name of ['state', 'definitions'])
        snapshot[name] = [...snapshot[name]!].sort((a, b) =>
          String((a as unknown[])[0]) < String((b as unknown[])[0]) ? -1 : 1,
        );
      return snapshot;
    };
    assert.deepEqual(byId(tabled), byId(batch));
    assert.equal(tabled.earlyBeforeLast, early.earlyBeforeLast);
    return { batch, early };
  };

  test('duplicates across and within files, an invalid document and values checked against their zone: as the batch path, taken while later files are parsed', async () => {
    const files = {
      'a.yaml': docs(
        zone('z', 'example.com'),
        record('x', '192.0.2.1'),
        record('c', 'target', 'CNAME'),
        record('bad', '192.0.2.9', 'BOGUS'),
        record('y', '192.0.2.3'),
        record('y', '192.0.2.4'),
      ),
      'b.yaml': docs(record('x', '192.0.2.2'), record('m', '10 mail', 'MX'), record('v', '192.0.2.999')),
      'c.yaml': docs(record('w', '192.0.2.5'), record('long', TWO_LABELS, 'CNAME')),
      'd.yaml': record('n', 'n2.example.com.', 'CNAME', false),
      'e.yaml': record('e', '192.0.2.6'),
    };
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'e.yaml' });
    assert.deepEqual(early.asked, [
      ['a.yaml', true],
      ['b.yaml', true],
      ['c.yaml', true],
      // A record set with no zoneRef whose values hold names: its zone is the deepest holding its
      // name, among every file's zones; from here on, after the last parse.
      ['d.yaml', false],
    ]);
    assert.equal(early.earlyBeforeLast, true, 'files taken before the last parse came back');
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the last parse came back');
    assert.equal(early.appliedBeforeLast.state, early.appliedBeforeLast.store);
    const codes = early.source.problems().map((p) => `${path.basename(p.file)} ${p.code}`);
    assert.ok(codes.includes('b.yaml DUPLICATE'), codes.join());
    assert.ok(codes.includes('a.yaml DUPLICATE'), codes.join());
    assert.ok(codes.includes('b.yaml INVALID_RDATA'), codes.join());
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/x')?.file, path.join(dir, 'a.yaml'));
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/long')?.file, path.join(dir, 'c.yaml'));
  });

  test('a later file giving a zone another domain than a file taken early used: those files are read again, the last in path order gives the origin', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('long', TWO_LABELS, 'CNAME'), record('x', '192.0.2.1')),
      'b.yaml': record('y', '192.0.2.2'),
      'c.yaml': zone('z', LONG),
      'd.yaml': record('e', '192.0.2.6'),
    };
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'd.yaml' });
    // Checked against the longer domain of c.yaml (as the batch path does), it is too long.
    assert.ok(
      early.source.problems().some((p) => p.code === 'INVALID_RDATA' && p.object === 'DNSRecordSet dns/long'),
    );
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/long'), undefined);
    assert.deepEqual(early.asked, [
      ['a.yaml', true],
      ['b.yaml', true],
      ['c.yaml', true],
    ]);
    assert.deepEqual(early.parsed, ['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml', 'a.yaml', 'b.yaml']);
    // a.yaml's objects were applied before the conflict was seen: taken back (uids and resource
    // versions included), then applied with the others.
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the last parse came back');
  });

  test('a file caught mid-write is not taken, nor any after it: as the batch path', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'b.yaml': record('y', '192.0.2.2'),
      'c.yaml': record('w', '192.0.2.3'),
      'd.yaml': record('e', '192.0.2.4'),
    };
    // b.yaml's writer finishes while it is read (`unsettled`): its read waits, its objects too.
    const during = onceAt('b.yaml', () =>
      writeFile(path.join(dir, 'b.yaml'), docs(record('y', '192.0.2.2'), record('y2', '192.0.2.7'))),
    );
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'd.yaml', during });
    assert.deepEqual(early.asked, [
      ['a.yaml', true],
      ['b.yaml', false],
    ]);
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/y'), undefined, 'b.yaml waits');
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/w')?.file, path.join(dir, 'c.yaml'));
  });

  test('a first load into a state that holds objects takes every file after the last parse', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'zk-early-state-'));
    try {
      await write({ 'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')) });
      const before = await StateStore.open(stateDir);
      await new ManifestSource({ dir, store: new MemoryStore(), state: before }).reload();
      await before.close();
      await write({ 'b.yaml': record('y', '192.0.2.2') });
      const state = await StateStore.open(stateDir);
      const source = new ManifestSource({ dir, store: new MemoryStore(), state });
      const inside = source as unknown as { takesEarly: (...args: unknown[]) => boolean };
      let asked = 0;
      const takesEarly = inside.takesEarly.bind(source);
      inside.takesEarly = (...args) => {
        asked++;
        return takesEarly(...args);
      };
      await source.reload();
      assert.equal(asked, 0);
      assert.equal(source.definitionOf('DNSRecordSet/dns/y')?.file, path.join(dir, 'b.yaml'));
      await state.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  test('a parse that fails forgets the files taken early: the next reload is a first load again, as the batch path', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'b.yaml': record('y', '192.0.2.2'),
      'c.yaml': record('w', '192.0.2.3'),
    };
    const during = onceAt('c.yaml', async () => {
      throw new Error('the parse thread stopped');
    });
    const batch = await load(
      { batch: true, probe: 'DNSRecordSet/dns/x', last: 'c.yaml', during: during() },
      files,
    );
    const early = await load(
      { batch: false, probe: 'DNSRecordSet/dns/x', last: 'c.yaml', during: during() },
      files,
    );
    assert.equal(early.earlyBeforeLast, true);
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the parse failed');
    assert.match(early.errors.join(), /the parse thread stopped/);
    assert.deepEqual(early.errors, batch.errors);
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/x'), undefined, 'forgotten');
    assert.deepEqual(early.snapshot(), batch.snapshot());
    await batch.source.reload();
    await early.source.reload();
    assert.deepEqual(early.snapshot(), batch.snapshot());
    // The folder's user (`serve`) goes on after a failed first load and watches the store: the first
    // load run again takes files early but applies nothing before the last parse.
    assert.equal(early.earlyBeforeLast, true);
    assert.deepEqual(
      early.appliedBeforeLast,
      { store: 0, state: 0 },
      'nothing applied early the second time',
    );
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/x')?.file, path.join(dir, 'a.yaml'));
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/w')?.file, path.join(dir, 'c.yaml'));
  });
  test('a read that fails after the last parse takes back what was applied early, the files taken early keep their definitions: as the batch path', async () => {
    // c.yaml is not taken early (a CNAME without zoneRef: the deepest zone could be a later file's),
    // so its invalid value's line is asked for after the last parse, of a parse thread that stopped.
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'b.yaml': record('y', '192.0.2.2'),
      'c.yaml': record('w', 'not..a.name', 'CNAME', false),
    };
    const locating = () => {
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        throw new Error('the parse thread stopped');
      };
    };
    const batch = await load(
      { batch: true, probe: 'DNSRecordSet/dns/x', last: 'c.yaml', locating: locating() },
      files,
    );
    const early = await load(
      { batch: false, probe: 'DNSRecordSet/dns/x', last: 'c.yaml', locating: locating() },
      files,
    );
    assert.equal(early.earlyBeforeLast, true);
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the read failed');
    assert.match(early.errors.join(), /the parse thread stopped/);
    assert.deepEqual(early.errors, batch.errors);
    assert.deepEqual(early.snapshot(), batch.snapshot());
    for (const id of ['DNSZone/dns/z', 'DNSRecordSet/dns/x', 'DNSRecordSet/dns/y']) {
      assert.deepEqual(early.source.definitionOf(id), batch.source.definitionOf(id), id);
      assert.ok(early.source.definitionOf(id) !== undefined, `${id} still defined by its file`);
    }
    // The failed load leaves a retry: the next reload applies what the files define, as the batch path.
    await batch.source.reload();
    await early.source.reload();
    assert.deepEqual(early.snapshot(), batch.snapshot());
    // The early path's files were not written since its failed load: only c.yaml is read again.
    assert.equal((early.snapshot() as { state: unknown[] }).state.length, 3, 'z, x and y applied');
  });

  test('a read that fails after the last parse on the batch path: the next reload applies the files read before it, unchanged since', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'b.yaml': record('y', '192.0.2.2'),
      'c.yaml': record('w', 'not..a.name', 'CNAME', false),
    };
    let done = false;
    const locating = async () => {
      if (done) return;
      done = true;
      throw new Error('the parse thread stopped');
    };
    const batch = await load({ batch: true, probe: 'DNSRecordSet/dns/x', last: 'c.yaml', locating }, files);
    assert.match(batch.errors.join(), /the parse thread stopped/);
    assert.deepEqual((batch.snapshot() as { state: unknown[] }).state, []);
    await batch.source.reload();
    assert.deepEqual(batch.parsed, ['a.yaml', 'b.yaml', 'c.yaml', 'c.yaml'], 'only c.yaml read again');
    const { store, state } = batch.snapshot() as { store: string[][]; state: [string, string][] };
    assert.deepEqual(
      state.map(([id]) => id),
      ['DNSZone/dns/z', 'DNSRecordSet/dns/x', 'DNSRecordSet/dns/y'],
    );
    assert.equal(store[KINDS.indexOf('DNSRecordSet')]!.length, 2);
  });

  test('files listed in another order than their paths sort in (a folder before `name-x.yaml`): taken early, applied after the last parse, the first path wins', async () => {
    // Listed: zones/example.yaml, zones-old.yaml, zz.yaml ('zones' < 'zones-old.yaml'); as paths,
    // zones-old.yaml comes first ('-' < '/'), so its x is the one served, as in the batch path.
    const files = {
      'zones/example.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'zones-old.yaml': record('x', '192.0.2.9'),
      'zz.yaml': record('y', '192.0.2.2'),
    };
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'zz.yaml' });
    assert.equal(early.earlyBeforeLast, true, 'taken early');
    assert.deepEqual(early.appliedBeforeLast, { store: 0, state: 0 }, 'applied after the last parse');
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/x')?.file, path.join(dir, 'zones-old.yaml'));
    const served = JSON.parse(
      (early.snapshot() as { store: string[][] }).store[KINDS.indexOf('DNSRecordSet')]![0]!,
    );
    assert.deepEqual(served.spec.records, ['192.0.2.9']);
  });

  test('an object applied early defined again by a later file, a zone with another domain too: a duplicate, as the batch path', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1'), zone('z2', 'example.net')),
      'b.yaml': docs(record('y', '192.0.2.2'), zone('z2', 'example.org'), record('x', '192.0.2.9')),
      'c.yaml': docs(zone('z2', 'example.net'), record('w', '192.0.2.3')),
      'd.yaml': record('e', '192.0.2.4'),
    };
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'd.yaml' });
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the last parse came back');
    const codes = early.source.problems().map((p) => `${path.basename(p.file)} ${p.code} ${p.object}`);
    // Not checked against the version applied early (a domain is immutable): that is no version served before.
    assert.ok(codes.includes('b.yaml DUPLICATE DNSZone dns/z2'), codes.join());
    assert.ok(codes.includes('c.yaml DUPLICATE DNSZone dns/z2'), codes.join());
    assert.ok(codes.includes('b.yaml DUPLICATE DNSRecordSet dns/x'), codes.join());
    assert.ok(!codes.some((c) => c.includes('INVALID')), codes.join());
    assert.equal(early.source.definitionOf('DNSZone/dns/z2')?.file, path.join(dir, 'a.yaml'));
  });

  test('files of record sets only, their ids found distinct where parsed or not (a duplicate in one message, across two, another namespace): as the batch path', async () => {
    const inNamespace = (namespace: string, name: string, value: string) =>
      record(name, value).replace('namespace: dns', `namespace: ${namespace}`);
    // More record sets than one message holds: b.yaml repeats its 10th in its 550th (the next
    // message), c.yaml its 3rd in its 5th (one message), d.yaml none (the names of b.yaml, in
    // another namespace), e.yaml none, one of them b.yaml's.
    const many = (n: number, name: (i: number) => string, namespace = 'dns') =>
      Array.from({ length: n }, (_, i) => inNamespace(namespace, name(i), `192.0.2.${i % 250}`));
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
      'b.yaml': docs(...many(600, (i) => (i === 549 ? 'b9' : `b${i}`))),
      'c.yaml': docs(...many(40, (i) => (i === 4 ? 'c2' : `c${i}`))),
      // With a labelled record set (not of the usual shape: the state keeps it whole) and one with a
      // TTL (not made by the message in the source's shape) among them.
      'd.yaml': docs(
        ...many(600, (i) => `b${i}`, 'other'),
        recordWith('labels: {a: b}', 'labelled', '192.0.2.7'),
        record('timed', '192.0.2.8').replace('  records:', '  ttl: 60\n  records:'),
      ),
      'e.yaml': docs(...many(40, (i) => (i === 7 ? 'b7' : `e${i}`))),
      'f.yaml': record('f', '192.0.2.6'),
    };
    const listed: number[] = [];
    const original = FileDefinitions.listed;
    FileDefinitions.listed = (ids, values) => {
      listed.push(ids.length);
      return original(ids, values);
    };
    let early: Run;
    try {
      ({ early } = await bothWays(files, { probe: 'DNSRecordSet/dns/x', last: 'f.yaml' }));
    } finally {
      FileDefinitions.listed = original;
    }
    // Listed (two loads from the parse threads' messages): a.yaml (a zone and a record set), d.yaml,
    // e.yaml and f.yaml, not the files with a duplicate.
    assert.deepEqual(listed, [2, 602, 40, 1, 2, 602, 40, 1]);
    const codes = early.source.problems().map((p) => `${path.basename(p.file)} ${p.code} ${p.object}`);
    assert.deepEqual(
      codes.filter((c) => c.includes('DUPLICATE')),
      [
        'b.yaml DUPLICATE DNSRecordSet dns/b9',
        'c.yaml DUPLICATE DNSRecordSet dns/c2',
        'e.yaml DUPLICATE DNSRecordSet dns/b7',
      ],
    );
    assert.equal(early.source.definitionOf('DNSRecordSet/other/b9')?.file, path.join(dir, 'd.yaml'));
    const labelled = early.source.definitionOf('DNSRecordSet/dns/labelled');
    assert.equal(labelled?.file, path.join(dir, 'd.yaml'));
    // What the early apply read of each file is not kept with it.
    const kept = (early.source as unknown as { files: Map<string, { usual?: unknown }> }).files;
    assert.equal(kept.size, 6);
    for (const state of kept.values()) assert.equal(state.usual, undefined);
    assert.equal(early.source.definitionOf('DNSRecordSet/dns/b7')?.file, path.join(dir, 'b.yaml'));
  });

  test('record sets taken early, then their file read again (labelled, annotated, with a TTL, another value): the store and the state as the batch path keeps them', async () => {
    const files = {
      'a.yaml': docs(
        zone('z', 'example.com'),
        record('x', '192.0.2.1'),
        record('l', '192.0.2.2'),
        record('n', '192.0.2.3'),
        record('t', '192.0.2.4'),
        record('v', '192.0.2.5'),
      ),
      'b.yaml': record('b', '192.0.2.6'),
    };
    const again = {
      'a.yaml': docs(
        zone('z', 'example.com'),
        record('x', '192.0.2.1'),
        recordWith('labels: {a: b}', 'l', '192.0.2.2'),
        recordWith('annotations: {c: d}', 'n', '192.0.2.3'),
        record('t', '192.0.2.4').replace('  records:', '  ttl: 60\n  records:'),
        record('v', '192.0.2.55'),
      ),
    };
    const options = { wire: true, table: true, probe: 'DNSRecordSet/dns/x', last: 'b.yaml' };
    const batch = await load({ ...options, batch: true }, files);
    const early = await load({ ...options, batch: false }, files);
    assert.equal(early.earlyBeforeLast, true);
    assert.deepEqual(early.snapshot(), batch.snapshot());
    await write(again);
    await batch.source.reload();
    await early.source.reload();
    assert.deepEqual(early.snapshot(), batch.snapshot());
    const { named, held } = readSnapshot(early);
    assert.deepEqual(named('l').metadata.labels, { a: 'b' });
    assert.deepEqual(named('n').metadata.annotations, { c: 'd' });
    assert.equal((named('t').spec as { ttl?: number }).ttl, 60);
    assert.deepEqual(
      ['x', 'l', 'n', 't', 'v'].map((name) => named(name).metadata.generation),
      [1, 1, 1, 2, 2],
    );
    assert.match(held.get('DNSRecordSet/dns/l')!, /"labels":\{"a":"b"\}/);
    assert.match(held.get('DNSRecordSet/dns/n')!, /"annotations":\{"c":"d"\}/);
  });

  test("a file's marks of record sets the message made are dropped where its listed ids were not distinct (no mark falls on a neighbour's place)", async () => {
    // A parse thread that said a file's ids were distinct when they were not (none does: this is
    // what the marks by place would meet then): `dup` twice, and a labelled record set after it.
    const files = {
      'a.yaml': docs(
        zone('z', 'example.com'),
        record('dup', '192.0.2.1'),
        record('dup', '192.0.2.2'),
        record('u', '192.0.2.3'),
        recordWith('labels: {a: b}', 'l', '192.0.2.4'),
      ),
      'b.yaml': record('b', '192.0.2.6'),
    };
    const run = await load(
      {
        batch: false,
        wire: true,
        sayDistinct: true,
        table: true,
        probe: 'DNSRecordSet/dns/u',
        last: 'b.yaml',
      },
      files,
    );
    assert.equal(run.earlyBeforeLast, true);
    const { named, held } = readSnapshot(run);
    assert.deepEqual(named('l').metadata.labels, { a: 'b' });
    assert.match(held.get('DNSRecordSet/dns/l')!, /"labels":\{"a":"b"\}/);
  });

  test('a first load with the store and the state sharing a record table, as `serve` wires them: each new record set taken early is looked up there once', async () => {
    const files = {
      'a.yaml': docs(
        zone('z', 'example.com'),
        record('a1', '192.0.2.1'),
        record('a2', '192.0.2.2'),
        record('a3', '192.0.2.3'),
      ),
      'b.yaml': docs(record('b1', '192.0.2.4'), record('b2', '192.0.2.5')),
      'c.yaml': record('c1', '192.0.2.6'),
    };
    const run = await load(
      { batch: false, wire: true, table: true, probe: 'DNSRecordSet/dns/a1', last: 'c.yaml' },
      files,
    );
    assert.deepEqual(run.asked, [
      ['a.yaml', true],
      ['b.yaml', true],
      ['c.yaml', true],
    ]);
    // The probe (`a1`) is asked for by this test while it waits; every other record set once, by the
    // early apply: not again by the definers, the store or the state.
    const others = run.lookups.filter((key) => key !== 'dns/a1');
    assert.deepEqual(others, ['dns/a2', 'dns/a3', 'dns/b1', 'dns/b2', 'dns/c1']);
    assert.ok(run.lookups.includes('dns/a1'));
    assert.equal(run.source.definitionOf('DNSRecordSet/dns/c1')?.file, path.join(dir, 'c.yaml'));
  });

  test('objects applied early and the rest after the last parse keep the order they were first defined in', async () => {
    const files = {
      'a.yaml': docs(zone('z', 'example.com'), record('m', '192.0.2.1'), record('k', '192.0.2.2')),
      'b.yaml': docs(record('a', '192.0.2.3'), zone('y', 'example.org'), record('m', '192.0.2.4')),
      'c.yaml': docs(record('c', '192.0.2.5'), record('b', '192.0.2.6')),
      // Not taken early (no zoneRef, values with names): it and every file after it after the last parse.
      'd.yaml': record('n', 'n2.example.com.', 'CNAME', false),
      'e.yaml': docs(record('aa', '192.0.2.7'), zone('x', 'example.net'), record('k', '192.0.2.8')),
    };
    const { early } = await bothWays(files, { probe: 'DNSRecordSet/dns/m', last: 'e.yaml' });
    assert.ok(early.appliedBeforeLast.store > 0, 'objects applied before the last parse came back');
    const order = (early.source as unknown as { options: { store: MemoryStore } }).options.store
      .list('DNSRecordSet')
      .map((o) => o.metadata.name);
    assert.deepEqual(order, ['m', 'k', 'a', 'c', 'b', 'n', 'aa']);
  });

  test('a state that would write objects before the load completes: nothing is applied early', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'zk-early-state-'));
    try {
      await write({
        'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
        'b.yaml': record('y', '192.0.2.2'),
      });
      const store = new MemoryStore();
      const state = await StateStore.open(stateDir);
      let applied = -1;
      const parser = holdingAt(
        'b.yaml',
        () => source.definitionOf('DNSRecordSet/dns/x') !== undefined,
        () => {
          applied = store.count('DNSRecordSet');
        },
      );
      const source = new ManifestSource({ dir, store, state, parser });
      await source.reload();
      assert.equal(source.definitionOf('DNSRecordSet/dns/x')?.file, path.join(dir, 'a.yaml'));
      assert.equal(applied, 0, 'taken early, applied after the last parse');
      assert.equal(store.count('DNSRecordSet'), 2);
      await state.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
  test("a first start's state, its compactions held: objects applied early, no line of them on disk before the load completes", async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'zk-early-state-'));
    try {
      await write({
        'a.yaml': docs(zone('z', 'example.com'), record('x', '192.0.2.1')),
        'b.yaml': record('y', '192.0.2.2'),
      });
      const store = new MemoryStore();
      const state = await StateStore.open(stateDir, { objectDelayMs: 0 });
      const release = state.holdCompaction();
      const onDisk = async () => {
        let text = '';
        for (const name of await readdir(stateDir)) text += await readFile(path.join(stateDir, name), 'utf8');
        return text;
      };
      let applied = -1;
      let written = '';
      const parser = holdingAt(
        'b.yaml',
        () => source.definitionOf('DNSRecordSet/dns/x') !== undefined,
        async () => {
          applied = store.count('DNSRecordSet');
          await new Promise((resolve) => setTimeout(resolve, 20));
          written = await onDisk();
        },
      );
      const source = new ManifestSource({ dir, store, state, parser });
      await source.reload();
      assert.equal(applied, 1, 'a.yaml applied before the last parse came back');
      assert.doesNotMatch(written, /dns\/x/, 'nothing of it written meanwhile');
      assert.doesNotMatch(await onDisk(), /dns\/x/, 'nor once loaded, until the release');
      release();
      await state.close();
      const again = await StateStore.open(stateDir);
      assert.deepEqual([...again.objectIds()].sort(), [
        'DNSRecordSet/dns/x',
        'DNSRecordSet/dns/y',
        'DNSZone/dns/z',
      ]);
      await again.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
