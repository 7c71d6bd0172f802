import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { testCertificate } from '../../../test/support/health-endpoints.ts';
import type { WatchEvent } from './reflector.ts';
import { DRAIN_LINES, WatchThread } from './watch-thread.ts';

/** Busy for `ms` on this thread: what a translation or a status projection does to the queue. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spinning
  }
}

/**
 * An API server stand-in in a process of its own (this thread is held busy while it sends): a watch
 * gets `count` events (`?count=`), one write each, `gap` ms apart (`?gap=`, 0: one per turn of its loop).
 */
const STAND_IN = `
const { createServer } = require('node:https');
const server = createServer({ key: process.env.KEY, cert: process.env.CERT }, (req, res) => {
  const url = new URL(req.url, 'https://x');
  const count = Number(url.searchParams.get('count'));
  const gap = Number(url.searchParams.get('gap'));
  res.writeHead(200, { 'content-type': 'application/json' });
  let i = 0;
  const next = () => {
    if (i >= count) return;
    res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'r' + i, resourceVersion: String(i) } } }) + '\\n');
    i++;
    if (gap > 0) setTimeout(next, gap);
    else setImmediate(next);
  };
  next();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

describe('the watch thread hands the events that queued while the main thread was busy over in one turn', () => {
  let child: ChildProcess;
  let config: KubeConfig;

  before(async () => {
    const { key, cert } = await testCertificate('localhost');
    child = spawn(process.execPath, ['-e', STAND_IN], {
      env: { ...process.env, KEY: key, CERT: cert },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', (code) => reject(new Error(`stand-in exited (${code})`)));
    });
    config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });

  after(() => {
    child.kill();
  });

  /**
   * Watches for `count` events sent `gap` ms apart; once the first arrived, holds this thread busy
   * for `busyMs`. Returns the events' names and the turn each came in (a turn ends at its microtask
   * checkpoint).
   */
  async function watchBusy(
    count: number,
    gap: number,
    busyMs: number,
  ): Promise<{ names: string[]; turns: number[] }> {
    const thread = new WatchThread(config);
    const names: string[] = [];
    const turns: number[] = [];
    let turn = 0;
    let scheduled = false;
    let all: () => void;
    const done = new Promise<void>((resolve) => {
      all = resolve;
    });
    let first = true;
    const handle = await thread.watch(
      '/apis/x/v1/things',
      { count, gap },
      30_000,
      (e: WatchEvent) => {
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(() => {
            scheduled = false;
            turn++;
          });
        }
        names.push((e.object as { metadata: { name: string } }).metadata.name);
        turns.push(turn);
        if (first) {
          first = false;
          // Later events queue on the channel meanwhile, many messages of the watch thread.
          setImmediate(() => busy(busyMs));
        }
        if (names.length === count) all();
      },
      () => {},
    );
    await done;
    handle.abort();
    await thread.close();
    return { names, turns };
  }

  test('in order, and those that queued in the first turn after the wait', async () => {
    const count = 200;
    const { names, turns } = await watchBusy(count, 1, 300);
    assert.deepEqual(
      names,
      Array.from({ length: count }, (_, i) => `r${i}`),
    );
    // What queued in 300 ms of events sent 1 ms apart comes in one turn after the wait (an event or
    // two may come before it, between the first turn and the wait). One message of the watch
    // thread (an event or few) per turn would be many turns.
    const perTurn = new Map<number, number>();
    for (const t of turns) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    const largest = Math.max(...perTurn.values());
    assert.ok(largest >= 20, `events per turn: ${[...perTurn.values()].join(', ')}`);
  });

  test(`a turn takes the messages that queued up to ${DRAIN_LINES} events, then the next turn the rest`, async () => {
    const count = 3000;
    const { names, turns } = await watchBusy(count, 0, 1500);
    assert.equal(names.length, count);
    assert.deepEqual(names.slice(0, 3), ['r0', 'r1', 'r2']);
    assert.equal(names.at(-1), `r${count - 1}`);
    const perTurn = new Map<number, number>();
    for (const t of turns) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    // 3,000 events queue in 1.5 s: taken whole they would be one turn after the first event's.
    assert.ok(perTurn.size >= 3, `events per turn: ${[...perTurn.values()].join(', ')}`);
  });
});
