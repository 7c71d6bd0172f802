import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { dateSerial, nextSerial, serialAdd, serialGreater } from './serial.ts';

const day = new Date(Date.UTC(2026, 10, 21, 12));

describe('serial', () => {
  test('starts at the date serial YYYYMMDD00', () => {
    assert.equal(dateSerial(day), 2026112100);
    assert.equal(nextSerial(undefined, day), 2026112100);
  });

  test('is max(YYYYMMDD00, last + 1)', () => {
    assert.equal(nextSerial(2026112100, day), 2026112101);
    assert.equal(
      nextSerial(2026112199, day),
      2026112200,
      'more than 100 changes a day run into the next day',
    );
    assert.equal(nextSerial(2020010100, day), 2026112100, 'an old serial jumps to today');
    assert.equal(nextSerial(1, day), 2026112100);
  });

  test('never goes backwards, even when the last serial is far ahead (RFC 1982)', () => {
    const ahead = 4000000000;
    const next = nextSerial(ahead, day);
    assert.equal(next, ahead + 1);
    assert.ok(serialGreater(next, ahead));
  });

  test('wraps around 2^32 and still increases', () => {
    const next = nextSerial(4294967295, day);
    assert.ok(serialGreater(next, 4294967295));
    assert.equal(serialAdd(4294967295, 1), 0);
    assert.ok(serialGreater(0, 4294967295));
    assert.ok(!serialGreater(4294967295, 0));
  });

  test('RFC 1982 comparison is undefined exactly half way; neither is greater', () => {
    assert.ok(!serialGreater(0, 2 ** 31));
    assert.ok(!serialGreater(2 ** 31, 0));
    assert.ok(!serialGreater(5, 5));
  });
});
