import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FRESHNESS_WINDOW_MS } from '../../homelab-protocol/signature.ts';
import { NonceCache } from './nonce-cache.ts';

describe('NonceCache', () => {
  test('a nonce is refused while its request is inside the window, and forgotten after', () => {
    const cache = new NonceCache();
    const t0 = Date.parse('2025-12-30T10:00:00Z');
    assert.deepEqual(cache.check('a', 'n1', t0, t0), { ok: true });
    assert.deepEqual(cache.check('a', 'n1', t0, t0 + 1000), { ok: false, reason: 'reused' });
    // Another caller's nonce space is its own.
    assert.deepEqual(cache.check('b', 'n1', t0, t0 + 1000), { ok: true });
    // At the window's end the replay is still refused here; past it the timestamp check refuses it.
    assert.deepEqual(cache.check('a', 'n1', t0, t0 + FRESHNESS_WINDOW_MS), { ok: false, reason: 'reused' });
    assert.deepEqual(cache.check('a', 'n2', t0 + FRESHNESS_WINDOW_MS + 1, t0 + FRESHNESS_WINDOW_MS + 1), {
      ok: true,
    });
    // n1 expired and was dropped from the front.
    assert.equal(cache.size, 2);
  });

  test('a nonce is kept until its own timestamp leaves the window (a request signed ahead of the clock)', () => {
    const cache = new NonceCache();
    const now = Date.parse('2025-12-30T10:00:00Z');
    const ahead = now + 4 * 60_000;
    assert.deepEqual(cache.check('a', 'n', ahead, now), { ok: true });
    // 8 minutes later its timestamp is still fresh (4 minutes ago): the replay must still be refused.
    assert.deepEqual(cache.check('a', 'n', ahead, now + 8 * 60_000), { ok: false, reason: 'reused' });
  });

  test('a flood of fresh nonces keeps memory bounded and fails closed; other callers are unaffected', () => {
    const cap = 1000;
    const cache = new NonceCache({ maxPerCaller: cap });
    let now = Date.parse('2025-12-30T10:00:00Z');
    let refused = 0;
    let retryAfter = 0;
    // One million signed requests within the window, 1 ms apart (~17 minutes of clock in all).
    for (let i = 0; i < 1_000_000; i++) {
      const v = cache.check('flooder', `n${i}`, now, now);
      if (!v.ok) {
        assert.equal(v.reason, 'full');
        refused++;
        retryAfter = Math.max(retryAfter, v.retryAfterSeconds);
      }
      assert.ok(cache.size <= cap, `size ${cache.size} after ${i} requests`);
      now += 1;
    }
    assert.ok(refused > 0, 'requests beyond the cap within the window are refused');
    assert.ok(retryAfter > 0 && retryAfter <= FRESHNESS_WINDOW_MS / 1000 + 1);
    // The flood took no other caller's share.
    assert.deepEqual(cache.check('quiet', 'q1', now, now), { ok: true });
    // Nothing live was forgotten to make room: the last accepted nonce is still refused as reused.
    const full = new NonceCache({ maxPerCaller: 2 });
    const t = Date.parse('2025-12-30T10:00:00Z');
    assert.ok(full.check('a', 'x', t, t).ok);
    assert.ok(full.check('a', 'y', t, t).ok);
    assert.equal((full.check('a', 'z', t, t + 10) as { reason: string }).reason, 'full');
    assert.equal((full.check('a', 'x', t, t + 10) as { reason: string }).reason, 'reused');
    // Once the window has passed, there is room again.
    assert.ok(full.check('a', 'z', t + FRESHNESS_WINDOW_MS + 2000, t + FRESHNESS_WINDOW_MS + 2000).ok);
    assert.equal(full.size, 1);
  });

  test('callers filling their shares lock no other caller out; memory is the shares of those who wrote', () => {
    const cap = 100;
    const cache = new NonceCache({ maxPerCaller: cap });
    const t = Date.parse('2025-12-30T10:00:00Z');
    for (const caller of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'])
      for (let i = 0; i < cap; i++) assert.ok(cache.check(caller, `${caller}-${i}`, t, t).ok);
    assert.equal((cache.check('a1', 'more', t, t) as { reason: string }).reason, 'full');
    assert.deepEqual(cache.check('victim', 'v1', t, t + 1), { ok: true });
    assert.equal(cache.size, 6 * cap + 1);
  });

  test('a full share says when its earliest nonce expires, not when its first inserted does', () => {
    const cache = new NonceCache({ maxPerCaller: 2 });
    const t = Date.parse('2025-12-30T10:00:00Z');
    // The first inserted is timestamped late in the window, the second early: the second expires first.
    assert.ok(cache.check('a', 'late', t + 200_000, t).ok);
    assert.ok(cache.check('a', 'early', t - 200_000, t).ok);
    const v = cache.check('a', 'third', t, t) as { reason: string; retryAfterSeconds: number };
    assert.equal(v.reason, 'full');
    assert.equal(v.retryAfterSeconds, Math.ceil((FRESHNESS_WINDOW_MS - 200_000 + 1) / 1000));
  });
});
