import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type JournalEntry, ZoneJournal } from './journal.ts';

const entry = (from: number, to: number): JournalEntry => ({ from, to, removed: [], added: [] });
const serials = (entries: JournalEntry[] | undefined) => entries?.map((e) => `${e.from}>${e.to}`);

describe('ZoneJournal', () => {
  test('answers the changes since a serial it holds, oldest first', () => {
    const j = new ZoneJournal(10);
    for (let s = 1; s < 5; s++) j.append(entry(s, s + 1));
    assert.deepEqual(serials(j.since(1)), ['1>2', '2>3', '3>4', '4>5']);
    assert.deepEqual(serials(j.since(3)), ['3>4', '4>5']);
    assert.deepEqual(j.since(5), [], 'the current serial: nothing to send');
    assert.equal(j.since(0), undefined, 'before the journal: AXFR');
    assert.equal(j.since(7), undefined, 'a serial never served: AXFR');
  });

  test('keeps only the last `limit` changes (RFC 1995 §5: the server may drop old ones)', () => {
    const j = new ZoneJournal(3);
    for (let s = 1; s <= 5; s++) j.append(entry(s, s + 1));
    assert.equal(j.length, 3);
    assert.equal(j.since(2), undefined, 'dropped');
    assert.deepEqual(serials(j.since(3)), ['3>4', '4>5', '5>6']);
    assert.equal(j.predates(2), true);
    assert.equal(j.predates(3), false);
  });

  test('a gap (the zone rebuilt whole in between) starts the chain again', () => {
    const j = new ZoneJournal(10);
    j.append(entry(1, 2));
    j.append(entry(2, 3));
    j.append(entry(7, 8));
    assert.equal(j.since(1), undefined, 'no IXFR across a rebuild');
    assert.deepEqual(serials(j.since(7)), ['7>8']);
  });

  test('serials wrap around (RFC 1982): the chain follows from/to, not numeric order', () => {
    const j = new ZoneJournal(10);
    j.append(entry(0xfffffffe, 0xffffffff));
    j.append(entry(0xffffffff, 0));
    j.append(entry(0, 1));
    assert.deepEqual(serials(j.since(0xfffffffe)), ['4294967294>4294967295', '4294967295>0', '0>1']);
    assert.equal(j.predates(0xfffffffd), true);
    assert.equal(j.predates(0), false);
  });

  test('size 0 disables it; resizing trims at once', () => {
    const off = new ZoneJournal(0);
    off.append(entry(1, 2));
    assert.equal(off.enabled, false);
    assert.equal(off.length, 0);
    assert.equal(off.since(1), undefined);
    const j = new ZoneJournal(5);
    for (let s = 1; s <= 5; s++) j.append(entry(s, s + 1));
    j.resize(2);
    assert.deepEqual(serials(j.since(4)), ['4>5', '5>6']);
    assert.equal(j.since(3), undefined);
    j.resize(0);
    assert.equal(j.length, 0);
    j.clear();
    assert.equal(j.predates(1), true, 'an empty journal reaches back to nothing');
  });
});
