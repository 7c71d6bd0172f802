import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { test } from 'node:test';
import { dig, rdataOf } from '../../../test/support/dig.ts';
import { buildQuery } from '../../../test/support/dns-client.ts';
import { IMAGE_TEST_SOA, IMAGE_TEST_ZONES } from '../../../test/support/image-zones.ts';
import { freePort } from '../../../test/support/ports.ts';
import { decodeMessage, encodeMessage, queryMessage } from '../../dns/message.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { type RecordTypeName, RRType } from '../../dns/rrtype.ts';
import { ImageZone } from '../../server/image/image-zone.ts';
import { ZoneImage } from '../../server/image/zone-image.ts';
import { QueryHandler } from '../../server/query-handler.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import { type ServedZone, ZoneTable } from '../../server/zone-table.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  DNS_YOUNG_GENERATION_ENV,
  DNS_YOUNG_GENERATION_MB,
  dnsYoungGenerationMb,
  servedFromImage,
  WorkerPoolBackend,
  type WorkerPoolOptions,
} from './worker-pool-backend.ts';

/** A pool of DNS threads listening on a free loopback port, serving its own zone table. */
async function newPool(options: Omit<WorkerPoolOptions, 'config'>) {
  const port = await freePort();
  const table = new ZoneTable<ServedZone>();
  const pool = new WorkerPoolBackend(table, { ...options, config: { listen: `127.0.0.1:${port}` } });
  return { port, table, pool };
}

/** A message the main thread sends its DNS threads, as far as these tests look at it. */
type Sent = { t: string; origin?: string; overlay?: unknown };

/**
 * Shows `see` every message the main thread sends a DNS thread, before it goes; a message for which
 * `drop` returns true is then not sent.
 */
function watchSends(
  pool: WorkerPoolBackend,
  see: (message: Sent) => void,
  drop?: (message: Sent) => boolean,
): void {
  const internals = pool as unknown as { send: (member: unknown, message: Sent) => void };
  const send = internals.send.bind(pool);
  internals.send = (member, message) => {
    see(message);
    if (drop?.(message)) return;
    send(member, message);
  };
}

/** The record sets' origin in the tests that do not name one. */
const TEST_SET = { kind: 'recordSet' as const, namespace: 'dns', name: 'test' };

/** An A RRset of one address. */
const aRRset = (owner: string, address: string, origin = TEST_SET): RRset => ({
  owner,
  type: 'A',
  ttl: 300,
  rdata: [{ type: 'A', address }],
  origin,
});

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
  const { port, table, pool } = await newPool({ workers: 1, ackTimeoutMs: 10_000 });
  // What the primary sends its workers, per zone: `image` or `zone` (objects).
  const sent: string[] = [];
  watchSends(pool, (message) => {
    if (message.t === 'image' || message.t === 'zone') sent.push(`${message.t} ${message.origin}`);
  });
  const soa = {
    ttl: 300,
    mname: 'ns1.example.org.',
    rname: 'h.example.org.',
    refresh: 1,
    retry: 1,
    expire: 1,
    minimum: 60,
  };
  // 40,000 two-octet characters as a record set's text is parsed: within the schema's 65,535
  // characters, 80,314 octets of RDATA (314 character-strings).
  const big: RRset = {
    owner: 'big.example.org.',
    type: 'TXT',
    ttl: 60,
    rdata: [parseRdata('TXT', 'é'.repeat(40_000), 'example.org.'), { type: 'TXT', strings: ['after'] }],
    origin: TEST_SET,
  };
  const small: RRset = {
    owner: 'small.example.org.',
    type: 'TXT',
    ttl: 60,
    rdata: [{ type: 'TXT', strings: ['hello'] }],
    origin: TEST_SET,
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
      rrsets: () => [aRRset('www.example.org.', '192.0.2.1'), big, small],
    });
    await pool.applyZone({
      key: 'dns/net',
      origin: 'example.net.',
      soa,
      serial: 1,
      rrsets: () => [aRRset('www.example.net.', '192.0.2.2')],
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

const SOA = {
  ttl: 300,
  mname: 'ns1.example.net.',
  rname: 'hostmaster.example.net.',
  refresh: 3600,
  retry: 600,
  expire: 86400,
  minimum: 60,
};
const KEY = { kind: 'recordSet' as const, namespace: 'many', name: 'www' };
const wwwA = (origin: string, address: string): RRset => aRRset(`www.${origin}`, address, KEY);

test('the main thread holds a zone as the image its DNS threads read, and patches continue its journal (ADR 0020 step 4)', async () => {
  const { port, table, pool } = await newPool({ workers: 2 });
  await pool.start();
  try {
    const origin = 'shared.test.';
    const transfers = { allowFrom: ['127.0.0.1'], requireTsig: false, keys: [], notify: [], journalSize: 10 };
    await pool.applyZone({
      key: 'many/shared',
      origin,
      soa: SOA,
      serial: 1,
      transfers,
      rrsets: () => [wwwA(origin, '192.0.2.1')],
    });
    const first = table.get(origin);
    // No objects per record here: the zone is the image, in a buffer every thread shares.
    assert.ok(first instanceof ImageZone);
    assert.ok(first.image.buffer instanceof SharedArrayBuffer);
    await pool.applyZone({
      key: 'many/shared',
      origin,
      soa: SOA,
      serial: 2,
      transfers,
      rrsets: () => [wwwA(origin, '192.0.2.2')],
      delta: { fromSerial: 1, upserts: [wwwA(origin, '192.0.2.2')], deletes: [] },
    });
    const second = table.get(origin);
    assert.ok(second instanceof ImageZone && second.serial === 2);
    assert.equal(second.journal.since(1)?.length, 1, 'the change is in the journal for IXFR');
    assert.equal(await pool.servedSerial(origin), 2);
    assert.deepEqual(rdataOf(await dig(port, `www.${origin}`, 'A'), 'A'), ['192.0.2.2']);
    // IXFR from a thread: the journal travelled with the image.
    const ixfr = await dig(port, origin, 'IXFR=1', { tcp: true });
    assert.match(ixfr.raw, /192\.0\.2\.1/);
    assert.match(ixfr.raw, /192\.0\.2\.2/);
  } finally {
    await pool.stop();
  }
});

test('a replacement DNS thread joins the port only once it holds every zone (never REFUSED meanwhile)', async (t) => {
  const ZONES = 1500;
  const logs: string[] = [];
  const { port, pool } = await newPool({ workers: 2, log: (_level, message) => logs.push(message) });
  await pool.start();
  const sockets = await Promise.all(
    Array.from(
      { length: 32 },
      () =>
        new Promise<dgram.Socket>((resolve) => {
          const s = dgram.createSocket('udp4');
          s.bind(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  try {
    for (let z = 0; z < ZONES; z++) {
      const origin = `z${z}.many.test.`;
      await pool.applyZone({
        key: `many/z${z}`,
        origin,
        soa: SOA,
        serial: 1,
        rrsets: () => [wwwA(origin, `192.0.2.${z % 250}`)],
      });
    }
    const last = `z${ZONES - 1}.many.test.`;
    assert.deepEqual(rdataOf(await dig(port, `www.${last}`, 'A'), 'A'), [`192.0.2.${(ZONES - 1) % 250}`]);
    const rcodes = new Map<number, number>();
    let answered = 0;
    for (const s of sockets) {
      s.on('message', (msg) => {
        const rcode = msg[3]! & 0xf;
        rcodes.set(rcode, (rcodes.get(rcode) ?? 0) + 1);
        answered++;
      });
    }
    const query = buildQuery({ name: `www.${last}`, type: 1 });
    const [victim] = pool.workerIds();
    await pool.terminateWorker(victim!);
    // Query from 32 source ports (spread over the threads) until the replacement has been up a while.
    let replacedAt: number | undefined;
    for (let i = 0; ; i++) {
      for (const s of sockets) s.send(query, port, '127.0.0.1');
      await new Promise((r) => setTimeout(r, 5));
      if (replacedAt === undefined) {
        const ids = pool.workerIds();
        if (ids.length === 2 && !ids.includes(victim!)) replacedAt = performance.now();
      }
      if (replacedAt !== undefined && performance.now() - replacedAt > 3000) break;
      if (i > 4000) assert.fail('no replacement thread started');
    }
    await new Promise((r) => setTimeout(r, 200));
    t.diagnostic(`${answered} answers: ${JSON.stringify(Object.fromEntries(rcodes))}`);
    assert.ok(answered > 0);
    assert.deepEqual([...rcodes.keys()], [0], 'every answer NOERROR, none REFUSED by a thread still loading');
    assert.ok(logs.some((m) => /DNS thread \d+ exited .*starting another/.test(m)));
  } finally {
    for (const s of sockets) s.close();
    await pool.stop();
  }
});

test('changes reach DNS threads as overlays, a bulk change whole, and an overlay past its share is merged into a new base', async () => {
  const { port, pool } = await newPool({ workers: 1, ackTimeoutMs: 10_000 });
  // What the primary sends its worker: `image` (with `+overlay` when it carries one) or `overlay`.
  const sent: string[] = [];
  watchSends(pool, (message) => {
    if (message.t === 'image') sent.push(message.overlay ? 'image+overlay' : 'image');
    else if (message.t === 'overlay' || message.t === 'zone' || message.t === 'patch') sent.push(message.t);
  });
  const soa = IMAGE_TEST_SOA;
  const records = new Map<string, RRset>();
  for (let i = 0; i < 100; i++)
    records.set(`h${i}.big.example.`, aRRset(`h${i}.big.example.`, `10.0.0.${i}`));
  let serial = 1;
  /** The zone at the current serial, with every record held. */
  const zone = () => ({
    key: 'dns/big',
    origin: 'big.example.',
    soa,
    serial,
    rrsets: () => [...records.values()],
  });
  const apply = (upserts: RRset[], deletes: { owner: string; type: 'A' }[]) => {
    const fromSerial = serial++;
    for (const r of upserts) records.set(r.owner, r);
    for (const d of deletes) records.delete(d.owner);
    return pool.applyZone({ ...zone(), delta: { fromSerial, upserts, deletes } });
  };
  await pool.start();
  try {
    await pool.applyZone(zone());
    assert.deepEqual(sent.splice(0), ['image']);
    // One record changed, one added below an empty non-terminal, one removed: overlays.
    await apply([aRRset('h1.big.example.', '192.0.2.1')], []);
    await apply([aRRset('x.new.big.example.', '192.0.2.2')], []);
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
      Array.from({ length: 65 }, (_, i) => aRRset(`bulk${i}.big.example.`, '192.0.2.3')),
      [],
    );
    assert.deepEqual(sent.splice(0), ['image']);
    // Overlays again over the new base, until one holds more than 64 names: then, once served, the
    // zone is merged into a new base, sent at the same serial.
    for (let i = 0; i < 63; i++) await apply([aRRset(`h${i}.big.example.`, '192.0.2.4')], []);
    assert.deepEqual(sent.splice(0), Array(63).fill('overlay'));
    await apply([aRRset('h70.big.example.', '192.0.2.5')], []);
    assert.deepEqual(sent.splice(0), ['overlay', 'image']);
    await apply([aRRset('h71.big.example.', '192.0.2.6')], []);
    assert.deepEqual(sent.splice(0), ['overlay']);
    assert.deepEqual(rdataOf(await dig(port, 'h71.big.example.', 'A'), 'A'), ['192.0.2.6']);
    assert.deepEqual(rdataOf(await dig(port, 'h62.big.example.', 'A'), 'A'), ['192.0.2.4']);
    assert.deepEqual(rdataOf(await dig(port, 'bulk9.big.example.', 'A'), 'A'), ['192.0.2.3']);
    assert.equal(await pool.servedSerial('big.example.'), serial);
    // A thread that dies is replaced and given the current base and overlay, not rebuilt.
    const [victim] = pool.workerIds();
    await pool.terminateWorker(victim!);
    for (let i = 0; i < 600; i++) {
      const ids = pool.workerIds();
      if (ids.length === 1 && ids[0] !== victim) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(sent.splice(0), ['image+overlay']);
    // Ready (it got the zones) comes before it binds the port: ask until it answers.
    let answer: Awaited<ReturnType<typeof dig>> | undefined;
    for (let i = 0; i < 100 && answer === undefined; i++) {
      answer = await dig(port, 'h71.big.example.', 'A').catch(() => undefined);
      if (answer === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(rdataOf(answer!, 'A'), ['192.0.2.6']);
    assert.equal(await pool.servedSerial('big.example.'), serial);
  } finally {
    await pool.stop();
  }
});

test('a zone of more than 5,000 records stays on its image across changes (no switch to objects)', async () => {
  const { port, table, pool } = await newPool({ workers: 1, ackTimeoutMs: 20_000 });
  const sent: string[] = [];
  watchSends(pool, (message) => {
    if (['image', 'overlay', 'zone', 'patch'].includes(message.t)) sent.push(message.t);
  });
  const a = (i: number, address: string): RRset => aRRset(`h${i}.large.example.`, address);
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
    // The main thread holds the image and its overlay, shared with the thread: no objects.
    const held = table.get('large.example.');
    assert.ok(held instanceof ImageZone && held.overlay !== undefined);
    assert.ok(
      held.image.buffer instanceof SharedArrayBuffer && held.overlay.buffer instanceof SharedArrayBuffer,
    );
  } finally {
    await pool.stop();
  }
});

test('a DNS thread holding another base than an overlay answers need-zone and gets the base and overlay', async () => {
  const { port, pool } = await newPool({ workers: 1, ackTimeoutMs: 10_000 });
  const sent: string[] = [];
  let dropImage = false;
  watchSends(
    pool,
    (message) => {
      if (message.t === 'image') sent.push(message.overlay ? 'image+overlay' : 'image');
      else if (message.t === 'overlay') sent.push('overlay');
    },
    // The merged base never reaches the thread: it keeps serving the old base with its overlay.
    (message) => dropImage && message.t === 'image',
  );
  const records = new Map<string, RRset>();
  for (let i = 0; i < 100; i++)
    records.set(`h${i}.base.example.`, aRRset(`h${i}.base.example.`, `10.0.0.${i}`));
  let serial = 1;
  const zone = () => ({ key: 'dns/base', origin: 'base.example.', soa: IMAGE_TEST_SOA, serial });
  /** One RRset changed: the next serial, sent with its delta. */
  const change = (r: RRset) => {
    records.set(r.owner, r);
    const fromSerial = serial++;
    return pool.applyZone({
      ...zone(),
      rrsets: () => [...records.values()],
      delta: { fromSerial, upserts: [r], deletes: [] },
    });
  };
  await pool.start();
  try {
    await pool.applyZone({ ...zone(), rrsets: () => [...records.values()] });
    // Names changed one by one over the base: overlays, until one passes the overlay's share (64
    // names) and is merged into a new base, sent whole at the same serial.
    dropImage = true;
    for (let i = 0; i < 80 && !sent.includes('image', 1); i++)
      await change(aRRset(`h${i}.base.example.`, '192.0.2.1'));
    dropImage = false;
    const overlays = sent.length - 2;
    assert.ok(overlays > 50, `${overlays} overlays before the merge`);
    assert.deepEqual(sent.splice(0), ['image', ...Array(overlays).fill('overlay'), 'image']);
    // The next overlay is over the merged base the thread never got: it asks for the zone whole.
    await change(aRRset('h99.base.example.', '192.0.2.99'));
    for (let i = 0; i < 100 && (await pool.servedSerial('base.example.')) !== serial; i++)
      await new Promise((res) => setTimeout(res, 50));
    assert.deepEqual(sent.splice(0), ['overlay', 'image+overlay']);
    assert.equal(await pool.servedSerial('base.example.'), serial);
    assert.deepEqual(rdataOf(await dig(port, 'h99.base.example.', 'A'), 'A'), ['192.0.2.99']);
    assert.deepEqual(rdataOf(await dig(port, 'h3.base.example.', 'A'), 'A'), ['192.0.2.1']);
  } finally {
    await pool.stop();
  }
});

test('a zone counts as served at a serial only once every DNS thread confirmed that serial (RFC 1982 wrap, lower serials)', async () => {
  // A short ack timeout: the held messages below are never confirmed while they are held.
  const { port, pool } = await newPool({ workers: 1, ackTimeoutMs: 100 });
  await pool.start();
  try {
    // Images and overlays to the thread are held back (a slow thread) while `hold` is set.
    const internals = pool as unknown as {
      pool: Map<number, { worker: { postMessage: (m: Sent) => void } }>;
    };
    const held: (() => void)[] = [];
    let hold = false;
    for (const member of internals.pool.values()) {
      const post = member.worker.postMessage.bind(member.worker);
      member.worker.postMessage = (m) => {
        if (hold && (m.t === 'image' || m.t === 'overlay')) held.push(() => post(m));
        else post(m);
      };
    }
    const origin = 'wrap.example.';
    const records = new Map<string, RRset>();
    for (let i = 0; i < 20; i++) records.set(`h${i}.${origin}`, aRRset(`h${i}.${origin}`, `10.0.0.${i}`));
    const zone = (serial: number) => ({ key: 'dns/wrap', origin, soa: IMAGE_TEST_SOA, serial });
    const served = () => pool.servedSerial(origin);
    /** Polls until the pool reports a serial (the thread confirmed something). */
    const confirmed = async () => {
      for (let i = 0; i < 200 && (await served()) === undefined; i++)
        await new Promise((r) => setTimeout(r, 25));
      return served();
    };
    await pool.applyZone({ ...zone(4294967290), rrsets: () => [...records.values()] });
    // On a loaded machine the thread may confirm after the short ack timeout: wait for it.
    assert.equal(await confirmed(), 4294967290);

    hold = true;
    // An overlay past the wrap: 3 follows 4294967290 (RFC 1982 §3.1), numerically lower.
    const changed = aRRset(`h0.${origin}`, '192.0.2.1');
    records.set(changed.owner, changed);
    await pool.applyZone({
      ...zone(3),
      rrsets: () => [...records.values()],
      delta: { fromSerial: 4294967290, upserts: [changed], deletes: [] },
    });
    assert.equal(held.length, 1, 'the change went as an overlay');
    assert.notEqual(await served(), 3, 'the thread has not confirmed the overlay');

    // The zone whole at a lower serial (as when it is deleted and created again), the overlay's
    // confirmation arriving late: the thread serves 3, not 2.
    await pool.applyZone({ ...zone(2), rrsets: () => [...records.values()] });
    assert.equal(held.length, 2, 'the zone went as an image');
    assert.notEqual(await served(), 2, 'the thread has not confirmed the image');
    held.shift()!();
    assert.notEqual(await confirmed(), 2, 'the thread confirmed serial 3 only');

    hold = false;
    held.shift()!();
    for (let i = 0; i < 200 && (await served()) !== 2; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(await served(), 2);
    assert.deepEqual(rdataOf(await dig(port, `h0.${origin}`, 'A'), 'A'), ['192.0.2.1']);
  } finally {
    await pool.stop();
  }
});

test('zones applied at once each resolve when every DNS thread confirmed that zone, whatever the others wait for', {
  timeout: 60_000,
}, async () => {
  // An ack timeout longer than the test's: an apply that no acknowledgement wakes fails the test.
  const { pool } = await newPool({ workers: 2, ackTimeoutMs: 120_000 });
  await pool.start();
  try {
    const internals = pool as unknown as {
      pool: Map<number, { worker: { postMessage: (m: Sent) => void } }>;
    };
    // The image of one zone to one thread is held back (a slow thread) until released.
    const slow = 'slow.example.';
    let release: (() => void) | undefined;
    const first = internals.pool.values().next().value!;
    const post = first.worker.postMessage.bind(first.worker);
    first.worker.postMessage = (m) => {
      if (m.t === 'image' && m.origin === slow && release === undefined) release = () => post(m);
      else post(m);
    };
    const zone = (origin: string, serial: number) => ({
      key: `dns/${origin}`,
      origin,
      soa: IMAGE_TEST_SOA,
      serial,
      rrsets: () => [aRRset(`www.${origin}`, '192.0.2.1')],
    });
    let slowDone = false;
    const slowApply = pool.applyZone(zone(slow, 7)).then(() => {
      slowDone = true;
    });
    const origins = Array.from({ length: 40 }, (_, i) => `z${i}.example.`);
    await Promise.all(
      origins.map(async (origin, i) => {
        await pool.applyZone(zone(origin, 100 + i));
        assert.equal(await pool.servedSerial(origin), 100 + i, origin);
      }),
    );
    assert.equal(slowDone, false, 'the zone one thread has not confirmed is still waited for');
    assert.equal(await pool.servedSerial(slow), undefined);
    release!();
    await slowApply;
    assert.equal(await pool.servedSerial(slow), 7);
    // Deletions wait for their own zone's confirmations alike.
    await Promise.all(origins.slice(0, 10).map((origin) => pool.deleteZone(origin)));
    for (const origin of origins.slice(0, 10)) assert.equal(await pool.servedSerial(origin), undefined);
    assert.equal(await pool.servedSerial(origins[10]!), 110);
  } finally {
    await pool.stop();
  }
});

/** The young-generation cap each running DNS thread reports (Worker.resourceLimits, read from the thread's heap). */
function youngLimits(pool: WorkerPoolBackend): number[] {
  const members = (
    pool as unknown as {
      pool: Map<number, { worker: { resourceLimits?: { maxYoungGenerationSizeMb: number } } }>;
    }
  ).pool;
  return [...members.values()].map((m) => m.worker.resourceLimits?.maxYoungGenerationSizeMb ?? -1);
}

test('DNS threads run with a capped young generation by default; 0 leaves V8 its own size', async () => {
  const capped = await newPool({ workers: 2 });
  await capped.pool.start();
  try {
    assert.deepEqual(youngLimits(capped.pool), [DNS_YOUNG_GENERATION_MB, DNS_YOUNG_GENERATION_MB]);
    await capped.pool.applyZone({
      key: 'young/a',
      origin: 'young.test.',
      soa: SOA,
      serial: 1,
      rrsets: () => [wwwA('young.test.', '192.0.2.9')],
    });
    assert.deepEqual(rdataOf(await dig(capped.port, 'www.young.test', 'A'), 'A'), ['192.0.2.9']);
  } finally {
    await capped.pool.stop();
  }
  const own = await newPool({ workers: 1, youngGenerationMb: 0 });
  await own.pool.start();
  try {
    const [limit] = youngLimits(own.pool);
    assert.ok(
      limit !== undefined && limit > DNS_YOUNG_GENERATION_MB,
      `V8's own young generation, got ${limit}`,
    );
  } finally {
    await own.pool.stop();
  }
});

test(`${DNS_YOUNG_GENERATION_ENV} overrides the DNS threads' young generation; a bad value says what to give`, () => {
  assert.equal(dnsYoungGenerationMb(undefined, {}), DNS_YOUNG_GENERATION_MB);
  assert.equal(dnsYoungGenerationMb(undefined, { [DNS_YOUNG_GENERATION_ENV]: '16' }), 16);
  assert.equal(dnsYoungGenerationMb(undefined, { [DNS_YOUNG_GENERATION_ENV]: '0' }), 0);
  assert.equal(dnsYoungGenerationMb(4, { [DNS_YOUNG_GENERATION_ENV]: '16' }), 4);
  assert.throws(() => dnsYoungGenerationMb(undefined, { [DNS_YOUNG_GENERATION_ENV]: '8MB' }), {
    code: 'DNS_YOUNG_MB_INVALID',
    message: /whole number of MiB/,
  });
});
