import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chooseSerial, knownSerial, laterSerial, statusSerial } from './serial-policy.ts';

const day = new Date(Date.UTC(2026, 10, 21, 12));

describe('serial policy', () => {
  test('laterSerial compares in RFC 1982 order, across the wrap', () => {
    assert.equal(laterSerial(undefined, undefined), undefined);
    assert.equal(laterSerial(5, undefined), 5);
    assert.equal(laterSerial(undefined, 5), 5);
    assert.equal(laterSerial(5, 7), 7);
    assert.equal(laterSerial(4294967290, 3), 3, '3 is after 4294967290 (wrapped)');
  });

  test('knownSerial takes the later of store and status; at equal serials the one with the hash', () => {
    assert.equal(knownSerial(undefined, undefined), undefined);
    assert.deepEqual(knownSerial(undefined, { serial: 9, hash: 'h' }), { serial: 9, hash: 'h' });
    assert.deepEqual(knownSerial({ serial: 9 }, undefined), { serial: 9 });
    assert.deepEqual(knownSerial({ serial: 9, hash: 'a' }, { serial: 12 }), { serial: 12 });
    assert.deepEqual(knownSerial({ serial: 12 }, { serial: 9, hash: 'b' }), { serial: 12 });
    assert.deepEqual(knownSerial({ serial: 12 }, { serial: 12, hash: 'b' }), { serial: 12, hash: 'b' });
    assert.deepEqual(knownSerial({ serial: 12, hash: 'a' }, { serial: 12, hash: 'b' }), {
      serial: 12,
      hash: 'a',
    });
    assert.deepEqual(knownSerial({ serial: 3 }, { serial: 12, hash: '' }), { serial: 12 }, 'no empty hash');
  });

  test('keeps the known serial only for the content whose hash was recorded with it', () => {
    assert.deepEqual(chooseSerial({ known: { serial: 2026010105, hash: 'h' }, hash: 'h', now: day }), {
      serial: 2026010105,
      kept: true,
    });
    // Other content, an unknown hash, or no hash offered: a new serial (the date serial is above).
    for (const known of [{ serial: 2026010105, hash: 'x' }, { serial: 2026010105 }]) {
      assert.deepEqual(chooseSerial({ known, hash: 'h', now: day }), { serial: 2026112100, kept: false });
    }
    assert.equal(chooseSerial({ known: { serial: 2026010105, hash: 'h' }, now: day }).serial, 2026112100);
  });

  test('a new serial goes above the known one and above every claimed one', () => {
    assert.equal(chooseSerial({ known: undefined, now: day }).serial, 2026112100);
    assert.equal(chooseSerial({ known: { serial: 2026112107 }, now: day }).serial, 2026112108);
    assert.equal(
      chooseSerial({ known: { serial: 2026112107 }, claimed: 2026112110, now: day }).serial,
      2026112111,
    );
    assert.equal(
      chooseSerial({ known: { serial: 2026112107 }, claimed: 2026112103, now: day }).serial,
      2026112108,
    );
    assert.equal(chooseSerial({ known: undefined, claimed: 2026112103, now: day }).serial, 2026112104);
    // RFC 1982: past 2^32 - 1 the serial wraps and still counts as an increase.
    assert.equal(chooseSerial({ known: { serial: 4294967295 }, now: day }).serial, 2026112100);
  });

  test('statusSerial shows a hash only when it belongs to that serial', () => {
    assert.deepEqual(statusSerial(7, 'h', undefined), { serial: 7, hash: 'h' });
    assert.deepEqual(statusSerial(7, undefined, { serial: 7, hash: 's' }), { serial: 7, hash: 's' });
    assert.deepEqual(statusSerial(7, undefined, { serial: 6, hash: 's' }), { serial: 7 });
  });
});
