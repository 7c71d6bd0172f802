import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type KubeObject,
  type ListerWatcher,
  type ListResult,
  Reflector,
  type WatchEvent,
  type WatchHandle,
} from './reflector.ts';

/**
 * A scripted lister-watcher: each list() and watch() call takes the next step of its script. The real
 * API server is exercised by test/kubernetes-source.test.ts; this pins the reflector's state machine.
 */
class Script implements ListerWatcher {
  lists: ListResult[] = [];
  watches: ((from: string, emit: (e: WatchEvent) => void, done: (err?: unknown) => void) => void)[] = [];
  watchedFrom: string[] = [];
  listCalls = 0;
  aborted = 0;

  async list(): Promise<ListResult> {
    this.listCalls++;
    const next = this.lists.shift();
    if (!next) throw Object.assign(new Error('list failed'), { statusCode: 500 });
    return next;
  }

  async watch(
    resourceVersion: string,
    _timeoutSeconds: number,
    onEvent: (event: WatchEvent) => void,
    onDone: (error?: unknown) => void,
  ): Promise<WatchHandle> {
    this.watchedFrom.push(resourceVersion);
    const step = this.watches.shift();
    if (step) queueMicrotask(() => step(resourceVersion, onEvent, onDone));
    return { abort: () => this.aborted++ };
  }
}

function obj(name: string, rv: string): KubeObject {
  return { kind: 'DNSZone', metadata: { name, namespace: 'ns', resourceVersion: rv } };
}

function until(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error('timed out'));
      else setTimeout(tick, 2);
    };
    tick();
  });
}

test('lists, signals synced, then watches from the list version; events and bookmarks move it on', async () => {
  const script = new Script();
  script.lists.push({ items: [obj('a', '10')], resourceVersion: '11' });
  script.watches.push((_from, emit, done) => {
    emit({ type: 'ADDED', object: obj('b', '12') });
    emit({ type: 'BOOKMARK', object: { kind: 'DNSZone', metadata: { resourceVersion: '20' } } });
    done(); // the server closed the watch normally
  });
  const replaced: KubeObject[][] = [];
  const events: string[] = [];
  const r = new Reflector({
    name: 'zones',
    listerWatcher: script,
    onReplace: (items) => replaced.push(items),
    onEvent: (type, o) => events.push(`${type} ${o.metadata?.name}`),
    backoff: { initialMs: 1 },
  });
  r.start();
  await r.synced;
  assert.equal(r.hasSynced, true);
  await until(() => script.watchedFrom.length >= 2);
  await r.stop();
  assert.deepEqual(
    replaced.map((items) => items.map((o) => o.metadata?.name)),
    [['a']],
  );
  assert.deepEqual(events, ['ADDED b']);
  // The second watch starts from the bookmark, without listing again.
  assert.deepEqual(script.watchedFrom.slice(0, 2), ['11', '20']);
  assert.equal(script.listCalls, 1);
});

test('410 Gone (as an ERROR event or as the watch status) lists again', async () => {
  const script = new Script();
  script.lists.push({ items: [obj('a', '1')], resourceVersion: '5' });
  script.lists.push({ items: [obj('b', '7')], resourceVersion: '8' });
  script.lists.push({ items: [], resourceVersion: '9' });
  script.watches.push((_f, emit) =>
    emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } }),
  );
  script.watches.push((_f, _emit, done) => done(Object.assign(new Error('Gone'), { statusCode: 410 })));
  const replaced: string[][] = [];
  const r = new Reflector({
    name: 'zones',
    listerWatcher: script,
    onReplace: (items) => replaced.push(items.map((o) => o.metadata?.name ?? '')),
    onEvent: () => {},
    backoff: { initialMs: 1 },
  });
  r.start();
  await until(() => replaced.length === 3);
  await r.stop();
  assert.deepEqual(replaced, [['a'], ['b'], []]);
  assert.deepEqual(script.watchedFrom.slice(0, 2), ['5', '8']);
});

test('errors back off, capped, and the watchdog restarts a silent watch from the last version', async () => {
  const script = new Script();
  // The first two lists fail (no script entry is a failure), then one succeeds.
  const failing = script.list.bind(script);
  let calls = 0;
  script.list = async () => {
    calls++;
    if (calls <= 2) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    return { items: [], resourceVersion: '3' };
  };
  void failing;
  // The watch never says anything: the watchdog must end it.
  script.watches.push(() => {});
  script.watches.push(() => {});
  const logs: string[] = [];
  const metrics: string[] = [];
  const started = Date.now();
  const r = new Reflector({
    name: 'zones',
    listerWatcher: script,
    onReplace: () => {},
    onEvent: () => {},
    backoff: { initialMs: 20, maxMs: 40 },
    inactivityMs: 50,
    log: (_level, message) => logs.push(message),
    onMetric: (what) => metrics.push(what),
  });
  r.start();
  await r.synced;
  const syncedAfter = Date.now() - started;
  assert.ok(syncedAfter >= 20 * 0.8 + 40 * 0.8, `backed off before retrying (${syncedAfter} ms)`);
  await until(() => script.watchedFrom.length >= 2);
  await r.stop();
  assert.deepEqual(script.watchedFrom.slice(0, 2), ['3', '3']);
  assert.ok(metrics.includes('watchdog'));
  assert.ok(script.aborted >= 1, 'the silent watch was aborted');
  assert.ok(logs.some((l) => /retrying in/.test(l)));
});

test('absentIsEmpty: a kind not installed (404) is synced and empty, and is listed once it exists', async () => {
  const script = new Script();
  let installed = false;
  const list = script.list.bind(script);
  script.list = async () => {
    if (!installed) {
      script.listCalls++;
      throw Object.assign(new Error('the server could not find the requested resource'), { status: 404 });
    }
    return list();
  };
  script.lists.push({ items: [obj('a', '3')], resourceVersion: '4' });
  const replaced: string[][] = [];
  const r = new Reflector({
    name: 'dnszones.dns.networking.miloapis.com',
    listerWatcher: script,
    onReplace: (items) => replaced.push(items.map((o) => o.metadata?.name ?? '')),
    onEvent: () => {},
    backoff: { initialMs: 1 },
    absentIsEmpty: { recheckMs: 5 },
  });
  r.start();
  await r.synced;
  assert.deepEqual(replaced[0], []);
  installed = true;
  await until(() => replaced.some((items) => items.includes('a')));
  await until(() => script.watchedFrom.includes('4'));
  await r.stop();
});

test('without absentIsEmpty a 404 is an error: not synced', async () => {
  const script = new Script();
  script.list = async () => {
    script.listCalls++;
    throw Object.assign(new Error('not found'), { status: 404 });
  };
  const r = new Reflector({
    name: 'zones',
    listerWatcher: script,
    onReplace: () => {},
    onEvent: () => {},
    backoff: { initialMs: 1, maxMs: 2 },
  });
  r.start();
  await until(() => script.listCalls >= 3);
  assert.equal(r.hasSynced, false);
  await r.stop();
});
