import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RRType } from '../dns/rrtype.ts';
import { DEFAULT_WINDOW_POLICY, epochOf, needsResign, signatureWindow } from './dnssec-window.ts';

const DAY = 86400;
const P = DEFAULT_WINDOW_POLICY.refreshSeconds;

describe('signature windows in epochs (ADR 0021)', () => {
  test('deterministic, case-insensitive, covering signedAt with at least one period left', () => {
    const t = Date.UTC(2026, 10, 26) / 1000;
    const w = signatureWindow(t, 'www.Example.com.', RRType.A);
    assert.deepEqual(w, signatureWindow(t, 'www.example.com.', RRType.A));
    assert.ok(w.inception <= t - 3600 + 1 && w.inception > t - P - 3600);
    assert.ok(w.expiration - t >= P, 'at least one period of validity left at signing');
    assert.equal(w.expiration - w.inception, 2 * P + 2 * 3600);
  });

  test('within an epoch the window does not move; RRsets change epochs at different moments', () => {
    const t = Date.UTC(2026, 10, 26) / 1000;
    const names = Array.from({ length: 50 }, (_, i) => `h${i}.example.com.`);
    let moved = 0;
    for (const n of names) {
      const w = signatureWindow(t, n, RRType.A);
      // The next hour: same epoch for most; the window never changes within an epoch.
      if (epochOf(t, n, RRType.A) === epochOf(t + 3600, n, RRType.A))
        assert.deepEqual(signatureWindow(t + 3600, n, RRType.A), w);
      else moved++;
    }
    assert.ok(moved <= 3, `${moved} of 50 RRsets moved epochs within one hour (expected about 50/168)`);
    // Over one whole period every RRset is re-signed exactly once.
    for (const n of names) assert.equal(epochOf(t + P, n, RRType.A) - epochOf(t, n, RRType.A), 1);
  });

  test('needsResign: when some RRset crossed into its next epoch, or a period passed', () => {
    const t = Date.UTC(2026, 10, 26) / 1000;
    const rrsets = [{ owner: 'a.example.com.', type: RRType.A }];
    const crossing = (() => {
      for (let h = 1; h <= 24 * 7; h++)
        if (epochOf(t, 'a.example.com.', RRType.A) !== epochOf(t + h * 3600, 'a.example.com.', RRType.A))
          return h;
      return undefined;
    })()!;
    assert.equal(needsResign(t, t + (crossing - 1) * 3600, rrsets), false);
    assert.equal(needsResign(t, t + crossing * 3600, rrsets), true);
    assert.equal(needsResign(t, t + 8 * DAY, []), true);
  });
});
