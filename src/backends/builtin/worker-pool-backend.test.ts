import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dig, rdataOf } from '../../../test/support/dig.ts';
import { IMAGE_TEST_SOA, IMAGE_TEST_ZONES } from '../../../test/support/image-zones.ts';
import { freePort } from '../../../test/support/ports.ts';
import { decodeMessage, encodeMessage, queryMessage } from '../../dns/message.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../../dns/rrtype.ts';
import { ZoneImage } from '../../server/image/zone-image.ts';
import { QueryHandler } from '../../server/query-handler.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import { ZoneTable } from '../../server/zone-table.ts';
import type { RRset } from '../../zones/rrset.ts';
import { servedFromImage, WorkerPoolBackend } from './worker-pool-backend.ts';

test('DNS workers get a zone as a zone image unless it carries DNSSEC material (ADR 0020 step 3)', () => {
  const [zone] = IMAGE_TEST_ZONES;
  const origin = zone!.origin;
  assert.equal(servedFromImage(ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, zone!.rrsets)), true);
  // DS at a cut is the parent's ordinary data, not signing material.
  assert.ok(zone!.rrsets.some((r) => r.type === 'DS'));
  // The zone model has no DNSSEC record types yet: the material is placed as signing would place it.
  for (const type of ['DNSKEY', 'RRSIG', 'NSEC', 'NSEC3', 'NSEC3PARAM', 'CDS', 'CDNSKEY']) {
    const owner = type === 'NSEC' || type === 'RRSIG' ? `www.${origin}` : origin;
    const rrsets = [...zone!.rrsets, { owner, type: type as RecordTypeName, ttl: 300, rdata: [] }];
    assert.equal(servedFromImage(ZoneSnapshot.build(origin, IMAGE_TEST_SOA, 1, rrsets)), false, type);
  }
});

test('a zone no image can hold (TXT RDATA over 65,535 octets) goes to DNS workers as objects and is answered', async () => {
  const port = await freePort();
  const table = new ZoneTable();
  const pool = new WorkerPoolBackend(table, {
    workers: 1,
    config: { listen: `127.0.0.1:${port}` },
    ackTimeoutMs: 10_000,
  });
  // What the primary sends its workers, per zone: `image` or `zone` (objects).
  const sent: string[] = [];
  const internals = pool as unknown as {
    send: (member: unknown, message: { t: string; origin?: string }) => void;
  };
  const send = internals.send.bind(pool);
  internals.send = (member, message) => {
    if (message.t === 'image' || message.t === 'zone') sent.push(`${message.t} ${message.origin}`);
    send(member, message);
  };
  const soa = {
    ttl: 300,
    mname: 'ns1.example.org.',
    rname: 'h.example.org.',
    refresh: 1,
    retry: 1,
    expire: 1,
    minimum: 60,
  };
  const origin = { kind: 'recordSet' as const, namespace: 'dns', name: 'test' };
  const a = (owner: string, address: string): RRset => ({
    owner,
    type: 'A',
    ttl: 300,
    rdata: [{ type: 'A', address }],
    origin,
  });
  // 40,000 two-octet characters as a record set's text is parsed: within the schema's 65,535
  // characters, 80,314 octets of RDATA (314 character-strings).
  const big: RRset = {
    owner: 'big.example.org.',
    type: 'TXT',
    ttl: 60,
    rdata: [parseRdata('TXT', 'é'.repeat(40_000), 'example.org.'), { type: 'TXT', strings: ['after'] }],
    origin,
  };
  const small: RRset = {
    owner: 'small.example.org.',
    type: 'TXT',
    ttl: 60,
    rdata: [{ type: 'TXT', strings: ['hello'] }],
    origin,
  };
  // No zone image holds it (its 16-bit RDATA length).
  assert.throws(() => ZoneImage.build('example.org.', soa, 1, [big]), /exceeds 65535/);
  await pool.start();
  try {
    await pool.applyZone({
      key: 'dns/org',
      origin: 'example.org.',
      soa,
      serial: 1,
      rrsets: () => [a('www.example.org.', '192.0.2.1'), big, small],
    });
    await pool.applyZone({
      key: 'dns/net',
      origin: 'example.net.',
      soa,
      serial: 1,
      rrsets: () => [a('www.example.net.', '192.0.2.2')],
    });
    assert.deepEqual(sent, ['zone example.org.', 'image example.net.']);
    // The worker answers from the objects: the other records whole.
    const www = await dig(port, 'www.example.org.', 'A', { tcp: true });
    assert.equal(www.status, 'NOERROR');
    assert.deepEqual(rdataOf(www, 'A'), ['192.0.2.1']);
    assert.deepEqual(rdataOf(await dig(port, 'small.example.org.', 'TXT', { tcp: true }), 'TXT'), [
      '"hello"',
    ]);
    // The oversized RRset fits no DNS message (RFC 1035 §3.2.1, §4.2.2): the worker answers as the
    // primary does from the same objects (truncated, no answer records), and answers on.
    const oversized = await dig(port, 'big.example.org.', 'TXT', { tcp: true });
    const primary = decodeMessage(
      (await new QueryHandler({ table, responseCache: 0 }).handle(
        encodeMessage(
          queryMessage('big.example.org.', RRType.TXT, {
            edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] },
          }),
        ),
        'tcp',
      ))!,
    );
    assert.equal(primary.answers.length, 0);
    assert.equal(primary.tc, true);
    assert.equal(oversized.status, 'NOERROR');
    assert.deepEqual(oversized.answer, []);
    assert.ok(oversized.flags.includes('tc'), oversized.raw);
    assert.deepEqual(rdataOf(await dig(port, 'www.example.org.', 'A', { tcp: true }), 'A'), ['192.0.2.1']);
    assert.deepEqual(rdataOf(await dig(port, 'www.example.net.', 'A'), 'A'), ['192.0.2.2']);
  } finally {
    await pool.stop();
  }
});

test('changes reach DNS workers as overlays, a bulk change whole, and an overlay past its share is merged into a new base', async () => {
  const port = await freePort();
  const table = new ZoneTable();
  const pool = new WorkerPoolBackend(table, {
    workers: 1,
    config: { listen: `127.0.0.1:${port}` },
    ackTimeoutMs: 10_000,
  });
  // What the primary sends its worker: `image` (with `+overlay` when it carries one) or `overlay`.
  const sent: string[] = [];
  const internals = pool as unknown as {
    send: (member: unknown, message: { t: string; overlay?: unknown }) => void;
  };
  const send = internals.send.bind(pool);
  internals.send = (member, message) => {
    if (message.t === 'image') sent.push(message.overlay ? 'image+overlay' : 'image');
    else if (message.t === 'overlay' || message.t === 'zone' || message.t === 'patch') sent.push(message.t);
    send(member, message);
  };
  const soa = IMAGE_TEST_SOA;
  const origin = { kind: 'recordSet' as const, namespace: 'dns', name: 'test' };
  const a = (owner: string, address: string): RRset => ({
    owner,
    type: 'A',
    ttl: 300,
    rdata: [{ type: 'A', address }],
    origin,
  });
  const records = new Map<string, RRset>();
  for (let i = 0; i < 100; i++) records.set(`h${i}.big.example.`, a(`h${i}.big.example.`, `10.0.0.${i}`));
  let serial = 1;
  const apply = (upserts: RRset[], deletes: { owner: string; type: 'A' }[]) => {
    const fromSerial = serial++;
    for (const r of upserts) records.set(r.owner, r);
    for (const d of deletes) records.delete(d.owner);
    return pool.applyZone({
      key: 'dns/big',
      origin: 'big.example.',
      soa,
      serial,
      rrsets: () => [...records.values()],
      delta: { fromSerial, upserts, deletes },
    });
  };
  await pool.start();
  try {
    await pool.applyZone({
      key: 'dns/big',
      origin: 'big.example.',
      soa,
      serial,
      rrsets: () => [...records.values()],
    });
    assert.deepEqual(sent.splice(0), ['image']);
    // One record changed, one added below an empty non-terminal, one removed: overlays.
    await apply([a('h1.big.example.', '192.0.2.1')], []);
    await apply([a('x.new.big.example.', '192.0.2.2')], []);
    await apply([], [{ owner: 'h2.big.example.', type: 'A' }]);
    assert.deepEqual(sent.splice(0), ['overlay', 'overlay', 'overlay']);
    assert.deepEqual(rdataOf(await dig(port, 'h1.big.example.', 'A'), 'A'), ['192.0.2.1']);
    assert.deepEqual(rdataOf(await dig(port, 'x.new.big.example.', 'A'), 'A'), ['192.0.2.2']);
    const ent = await dig(port, 'new.big.example.', 'A');
    assert.equal(ent.status, 'NOERROR');
    assert.deepEqual(ent.answer, []);
    assert.equal((await dig(port, 'h2.big.example.', 'A')).status, 'NXDOMAIN');
    assert.equal(await pool.servedSerial('big.example.'), serial);
    // 65 names changed alone (more than the 64 an overlay of a small zone holds): the zone goes whole.
    await apply(
      Array.from({ length: 65 }, (_, i) => a(`bulk${i}.big.example.`, '192.0.2.3')),
      [],
    );
    assert.deepEqual(sent.splice(0), ['image']);
    // Overlays again over the new base, until one holds more than 64 names: then, once served, the
    // zone is merged into a new base, sent at the same serial.
    for (let i = 0; i < 63; i++) await apply([a(`h${i}.big.example.`, '192.0.2.4')], []);
    assert.deepEqual(sent.splice(0), Array(63).fill('overlay'));
    await apply([a('h70.big.example.', '192.0.2.5')], []);
    assert.deepEqual(sent.splice(0), ['overlay', 'image']);
    await apply([a('h71.big.example.', '192.0.2.6')], []);
    assert.deepEqual(sent.splice(0), ['overlay']);
    assert.deepEqual(rdataOf(await dig(port, 'h71.big.example.', 'A'), 'A'), ['192.0.2.6']);
    assert.deepEqual(rdataOf(await dig(port, 'h62.big.example.', 'A'), 'A'), ['192.0.2.4']);
    assert.deepEqual(rdataOf(await dig(port, 'bulk9.big.example.', 'A'), 'A'), ['192.0.2.3']);
    assert.equal(await pool.servedSerial('big.example.'), serial);
  } finally {
    await pool.stop();
  }
});

test('a zone of more than 5,000 records stays on its image across changes (no switch to objects)', async () => {
  const port = await freePort();
  const table = new ZoneTable();
  const pool = new WorkerPoolBackend(table, {
    workers: 1,
    config: { listen: `127.0.0.1:${port}` },
    ackTimeoutMs: 20_000,
  });
  const sent: string[] = [];
  const internals = pool as unknown as { send: (member: unknown, message: { t: string }) => void };
  const send = internals.send.bind(pool);
  internals.send = (member, message) => {
    if (['image', 'overlay', 'zone', 'patch'].includes(message.t)) sent.push(message.t);
    send(member, message);
  };
  const origin = { kind: 'recordSet' as const, namespace: 'dns', name: 'test' };
  const a = (i: number, address: string): RRset => ({
    owner: `h${i}.large.example.`,
    type: 'A',
    ttl: 300,
    rdata: [{ type: 'A', address }],
    origin,
  });
  const records = Array.from({ length: 6_000 }, (_, i) => a(i, `10.0.${i >> 8}.${i & 255}`));
  await pool.start();
  try {
    const zone = { key: 'dns/large', origin: 'large.example.', soa: IMAGE_TEST_SOA };
    await pool.applyZone({ ...zone, serial: 1, rrsets: () => records });
    for (let serial = 2; serial <= 3; serial++) {
      records[serial] = a(serial, `192.0.2.${serial}`);
      await pool.applyZone({
        ...zone,
        serial,
        rrsets: () => records,
        delta: { fromSerial: serial - 1, upserts: [records[serial]!], deletes: [] },
      });
    }
    assert.deepEqual(sent, ['image', 'overlay', 'overlay']);
    assert.deepEqual(rdataOf(await dig(port, 'h3.large.example.', 'A'), 'A'), ['192.0.2.3']);
    assert.equal(await pool.servedSerial('large.example.'), 3);
  } finally {
    await pool.stop();
  }
});
