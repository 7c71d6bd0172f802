import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IMAGE_TEST_SOA, IMAGE_TEST_ZONES, imageRRset } from '../../../test/support/image-zones.ts';
import { printRdata } from '../../dns/rdata.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { journalWire, readJournalWire } from './journal-wire.ts';

test('a journal entry in wire form is encoded once and reads back to the same records', () => {
  const [zone] = IMAGE_TEST_ZONES;
  const snapshot = ZoneSnapshot.build(zone!.origin, IMAGE_TEST_SOA, 1, zone!.rrsets);
  snapshot.journal.resize(4);
  snapshot.patch(
    {
      upserts: [
        imageRRset('example.org.', 'MX', 600, '5 mx2.example.org.'),
        imageRRset('www.example.org.', 'A', 60, '192.0.2.1', '192.0.2.9'),
        imageRRset('Mixed.Case.example.org.', 'TXT', 60, '"a" "b"'),
      ],
      deletes: [{ owner: 'alias.example.org.', type: 'CNAME' }],
    },
    2,
    IMAGE_TEST_SOA,
  );
  const [entry] = snapshot.journal.all();
  const wire = journalWire(entry!);
  assert.equal(journalWire(entry!), wire, 'encoded once per entry');
  const read = readJournalWire(wire.slice(0));
  const lines = (e: typeof entry) =>
    [...e!.removed.map((s) => ['-', s] as const), ...e!.added.map((s) => ['+', s] as const)].flatMap(
      ([sign, s]) => s.rdata.map((r) => `${sign} ${s.owner} ${s.ttl} ${s.type} ${printRdata(r)}`),
    );
  assert.equal(read.from, 1);
  assert.equal(read.to, 2);
  assert.deepEqual(lines(read), lines(entry));
  assert.ok(
    lines(read).some((l) => l.startsWith('+ Mixed.Case.example.org.')),
    'owner case kept',
  );
  assert.throws(() => readJournalWire(new Uint8Array(wire.byteLength).buffer), /magic/);
  assert.throws(() => readJournalWire(wire.slice(0, wire.byteLength - 1)), /truncated/);
});
