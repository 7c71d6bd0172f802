import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AgentCache, tlsKey } from './watch-agents.ts';
import type { WatchTls } from './watch-thread.ts';

const KEY = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIsecretkeymaterial\n-----END EC PRIVATE KEY-----\n';

class FakeAgent {
  destroyed = false;
  readonly tls: WatchTls;
  constructor(tls: WatchTls) {
    this.tls = tls;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

describe('the watch thread keeps one keep-alive agent per TLS setting in use', () => {
  test('the cache key is a SHA-256 of the settings: no key or passphrase in it', () => {
    const tls: WatchTls = {
      ca: 'CA',
      cert: 'CERT',
      key: KEY,
      passphrase: 'hunter2',
      pfx: new Uint8Array([1, 2, 3]),
    };
    const key = tlsKey(tls);
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.ok(!key.includes('secretkeymaterial') && !key.includes('hunter2'));
    const cache = new AgentCache((t) => new FakeAgent(t));
    cache.acquire(tls);
    for (const k of cache.keys) assert.ok(!k.includes('secretkeymaterial') && !k.includes('hunter2'));
    // Equal settings, equal key; any field changed, another key.
    assert.equal(tlsKey({ ...tls, pfx: new Uint8Array([1, 2, 3]) }), key);
    for (const other of [
      { ...tls, key: `${KEY}x` },
      { ...tls, passphrase: 'other' },
      { ...tls, pfx: new Uint8Array([1, 2, 4]) },
      { ...tls, rejectUnauthorized: false },
      { ...tls, servername: 'api' },
      { ca: 'CA', cert: 'CERTkey', passphrase: 'hunter2' },
    ] satisfies WatchTls[])
      assert.notEqual(tlsKey(other), key);
    // Field boundaries count: moving text from one field to the next is another setting.
    assert.notEqual(tlsKey({ ca: 'ab', cert: 'c' }), tlsKey({ ca: 'a', cert: 'bc' }));
  });

  test('a client certificate rotated: the previous agent is destroyed once its watches ended', () => {
    const cache = new AgentCache((t) => new FakeAgent(t));
    const first = cache.acquire({ cert: 'old', key: 'old' });
    const again = cache.acquire({ cert: 'old', key: 'old' });
    assert.equal(again.agent, first.agent, 'one agent per setting');
    const rotated = cache.acquire({ cert: 'new', key: 'new' });
    assert.notEqual(rotated.agent, first.agent);
    first.release();
    assert.equal(first.agent.destroyed, false, 'a watch still runs on it');
    again.release();
    again.release(); // released twice: counted once
    assert.equal(first.agent.destroyed, true, 'idle and replaced: destroyed');
    assert.equal(cache.keys.length, 1);
    // The current agent stays while idle, for the next watch.
    rotated.release();
    assert.equal(rotated.agent.destroyed, false);
    assert.equal(cache.acquire({ cert: 'new', key: 'new' }).agent, rotated.agent);
    // Rotations with nothing running on the old agent: it goes at once; one agent held.
    for (let i = 0; i < 5; i++) cache.acquire({ cert: `c${i}`, key: `k${i}` }).release();
    assert.equal(cache.keys.length, 2, 'the current one and the one a watch still holds');
  });
});
