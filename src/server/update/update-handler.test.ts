import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { gatedWriter } from '../../../test/support/gated-writer.ts';
import { recordSet, zone, zoneClass } from '../../../test/support/resources.ts';
import type { DNSRecordSet } from '../../api/index.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { decodeMessage, encodeMessage, type Message, Opcode, queryMessage } from '../../dns/message.ts';
import { parseRdata } from '../../dns/rdata.ts';
import { RRClass, RRType } from '../../dns/rrtype.ts';
import { parseTsigKey, readTsig, signMessage } from '../../dns/tsig.ts';
import { catalogGate } from '../../sources/writes/catalog-gate.ts';
import { FolderWriteStore } from '../../sources/writes/folder-write-store.ts';
import { type RecordWriter, WriteCoordinator } from '../../writes/record-writer.ts';
import { WriteError, type WriteRequest } from '../../writes/write-request.ts';
import { assembleZone } from '../../zones/assemble.ts';
import { Catalog } from '../../zones/catalog.ts';
import { zoneAssemblyInput } from '../../zones/zone-inputs.ts';
import { TransferPolicy } from '../transfer/transfer-policy.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { ZoneTable } from '../zone-table.ts';
import { UpdateRcode } from './update-eval.ts';
import { UpdateHandler } from './update-handler.ts';

const secret = randomBytes(32).toString('base64');
const key = parseTsigKey({ name: 'dyn-key', algorithm: 'hmac-sha256', secret });

function table(...origins: string[]): ZoneTable {
  return tableWith(origins, []);
}

function tableWith(origins: string[], records: DNSRecordSet[]): ZoneTable {
  const c = new Catalog();
  c.setClass(zoneClass('builtin', ['ns1.example.com.']));
  for (const r of records) c.setRecord(r);
  const t = new ZoneTable();
  for (const origin of origins) {
    const name = origin.replaceAll('.', '-');
    c.setZone(zone('dns', name, origin));
    const assembled = assembleZone(zoneAssemblyInput(c, `dns/${name}`)!);
    const policy = new TransferPolicy({
      allowFrom: [],
      requireTsig: false,
      keys: [{ name: 'dyn-key', algorithm: 'hmac-sha256', secret, usage: ['update'] }],
      notify: [],
      journalSize: 8,
      update: { namespace: 'dns', rules: [{ key: 'dyn-key', names: ['*.dyn'], types: ['TXT'] }] },
    } as ConstructorParameters<typeof TransferPolicy>[0]);
    t.set(ZoneSnapshot.build(assembled.origin, assembled.soa, 1, assembled.rrsets, policy));
  }
  return t;
}

/** An UPDATE adding one TXT at `x.dyn` of `origin`. */
function update(origin: string, value: string, id = 7): Uint8Array {
  return updateAt(origin, `x.dyn.${origin}.`, value, id);
}

/** The signed message with its MAC cut to `n` octets (RFC 8945 §5.2.2.1 allows 16..32 for SHA-256). */
function truncated(signed: Uint8Array, n: number): Uint8Array {
  const found = readTsig(signed)!;
  const rr = signed.subarray(found.start);
  let o = 0;
  while (rr[o] !== 0) o += rr[o]! + 1;
  o += 1;
  const rdStart = o + 10;
  let a = rdStart;
  while (rr[a] !== 0) a += rr[a]! + 1;
  a += 1;
  const macSizeAt = a + 8;
  const size = (rr[macSizeAt]! << 8) | rr[macSizeAt + 1]!;
  const out = Buffer.concat([
    signed.subarray(0, found.start),
    rr.subarray(0, macSizeAt),
    Buffer.from([0, n]),
    found.record.mac.subarray(0, n),
    rr.subarray(macSizeAt + 2 + size),
  ]);
  out.writeUInt16BE(out.length - found.start - rdStart, found.start + o + 8);
  return out;
}

/** A record writer that records each request and holds it until released. */
function heldWriter(hold: (id: string, zoneName: string) => boolean) {
  const applied: string[] = [];
  const releases: (() => void)[] = [];
  const writer = {
    apply: async (_credential: string, request: { id: string; changes: { name: string }[] }) => {
      applied.push(request.id);
      if (hold(request.id, request.changes[0]!.name))
        await new Promise<void>((resolve) => releases.push(resolve));
      return { namespace: 'dns', replayed: false, changes: [] };
    },
  } as unknown as RecordWriter;
  return {
    writer,
    applied,
    release: () => {
      for (const r of releases.splice(0)) r();
    },
  };
}

const rcode = (bytes: Uint8Array | null) => decodeMessage(bytes!).rcode;
/** Lets pending promise callbacks run (no timers). */
/** Waits (no deadline: the test's timeout guards) until a condition holds. */
const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
};
const ticks = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

test('a captured UPDATE is applied once: the exact copy, a new header ID and every truncated MAC are refused', async () => {
  const { writer, applied } = heldWriter(() => false);
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1 });
  const signed = signMessage(update('example.com', 'v'), key).bytes;
  assert.equal(rcode(await h.handle(signed, '203.0.113.9')), UpdateRcode.NOERROR);
  assert.equal(rcode(await h.handle(signed, '203.0.113.9')), UpdateRcode.REFUSED);
  const otherId = Buffer.from(signed);
  otherId.writeUInt16BE(4242, 0);
  assert.equal(rcode(await h.handle(otherId, '203.0.113.9')), UpdateRcode.REFUSED);
  for (let n = 31; n >= 16; n--) {
    // BADTRUNC (NOTAUTH): UPDATE requires the full MAC.
    const answer = await h.handle(truncated(signed, n), '203.0.113.9');
    assert.notEqual(rcode(answer), UpdateRcode.NOERROR, `MAC truncated to ${n} octets`);
  }
  assert.equal(applied.length, 1, `written ${applied.length} times`);
  // The record writer's request id does not depend on the MAC's form either.
  assert.match(applied[0]!, /^tsig-[0-9a-f]{64}$/);
});

test('a truncated MAC is refused with BADTRUNC even for a message never seen', async () => {
  const { writer, applied } = heldWriter(() => false);
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1 });
  const signed = signMessage(update('example.com', 'w'), key).bytes;
  const answer = await h.handle(truncated(signed, 16), '203.0.113.9');
  assert.equal(rcode(answer), UpdateRcode.NOTAUTH);
  assert.equal(readTsig(answer!)?.record.error, 22);
  assert.equal(applied.length, 0);
  // The full message is still accepted afterwards: a refused copy does not burn it.
  assert.equal(rcode(await h.handle(signed, '203.0.113.9')), UpdateRcode.NOERROR);
});

test('an unsigned UPDATE and an UPDATE to another zone are answered while a slow write is in flight', {
  timeout: 30_000,
}, async () => {
  const { writer, applied, release } = heldWriter((_id, name) => name.endsWith('example.com.'));
  const h = new UpdateHandler(table('example.com', 'example.org'), { writer: () => writer, settleMs: 1 });
  const events: string[] = [];
  const slow = h.handle(signMessage(update('example.com', 'slow'), key).bytes, 'a').then((r) => {
    events.push('slow');
    return r;
  });
  await ticks();
  assert.equal(applied.length, 1, 'the slow write is in flight');
  const unsigned = h.handle(update('example.com', 'x'), 'b').then((r) => {
    events.push('unsigned');
    return r;
  });
  const other = h.handle(signMessage(update('example.org', 'y'), key).bytes, 'c').then((r) => {
    events.push('other zone');
    return r;
  });
  // Both are answered before the slow write is released (before, they waited behind it for ever:
  // the test's timeout guards against that hang, it measures nothing).
  const [u, o] = await Promise.all([unsigned, other]);
  events.push('released');
  release();
  const s = await slow;
  assert.deepEqual(events, ['unsigned', 'other zone', 'released', 'slow']);
  assert.equal(rcode(u), UpdateRcode.REFUSED);
  assert.equal(rcode(o), UpdateRcode.NOERROR);
  assert.equal(rcode(s), UpdateRcode.NOERROR);
});

test('UPDATEs to one zone are written one at a time, in order', async () => {
  const { writer, applied, release } = heldWriter(() => true);
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1 });
  const first = h.handle(signMessage(update('example.com', '1', 1), key).bytes, 'a');
  const second = h.handle(signMessage(update('example.com', '2', 2), key).bytes, 'a');
  await ticks();
  assert.equal(applied.length, 1, 'the second waits for the first');
  release();
  await first;
  await ticks();
  assert.equal(applied.length, 2);
  release();
  assert.equal(rcode(await second), UpdateRcode.NOERROR);
});

test('at most maxPending authenticated UPDATEs wait; the rest are REFUSED at once and may be resent', {
  timeout: 30_000,
}, async () => {
  const { writer, applied, release } = heldWriter(() => true);
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1, maxPending: 3 });
  const messages = Array.from(
    { length: 10 },
    (_, i) => signMessage(update('example.com', `v${i}`, i), key).bytes,
  );
  const answers = messages.map((m) => h.handle(m, 'a'));
  const early = await Promise.all(answers.slice(3));
  for (const a of early) assert.equal(rcode(a), UpdateRcode.REFUSED);
  assert.equal(h.pendingWrites, 3);
  for (let i = 1; i <= 3; i++) {
    await until(() => applied.length === i);
    release();
  }
  for (const a of await Promise.all(answers.slice(0, 3))) assert.equal(rcode(a), UpdateRcode.NOERROR);
  await ticks();
  assert.equal(h.pendingWrites, 0);
  assert.equal(applied.length, 3);
  // A message refused for the cap was not remembered as seen: sent again, it is written.
  const again = h.handle(messages[5]!, 'a');
  await until(() => applied.length === 4);
  release();
  assert.equal(rcode(await again), UpdateRcode.NOERROR);
});

test('each change carries the RRset it was evaluated against; a stale one is evaluated once more, then SERVFAIL', async () => {
  const requests: WriteRequest[] = [];
  let refusals = 0;
  const writer = {
    apply: async (_credential: string, request: WriteRequest) => {
      requests.push(structuredClone(request));
      if (refusals-- > 0) throw new WriteError('PRECONDITION_FAILED', 'the RRset changed');
      return { namespace: 'dns', replayed: false, changes: [] };
    },
  } as unknown as RecordWriter;
  const held = recordSet('dns', 'held', {
    name: 'x.dyn.example.com.',
    type: 'TXT',
    ttl: 60,
    records: ['"held"'],
  });
  const h = new UpdateHandler(tableWith(['example.com'], [held]), { writer: () => writer, settleMs: 1 });
  // Evaluated against the served TXT "held": the whole new RRset, expecting "held".
  assert.equal(rcode(await h.handle(signMessage(update('example.com', 'a', 1), key).bytes, 'r')), 0);
  assert.deepEqual(requests[0]!.changes[0]!.expect, { ttl: 60, records: ['"held"'] });
  assert.deepEqual((requests[0]!.changes[0]! as { records: string[] }).records, ['"held"', '"a"']);
  // Refused once: evaluated again and written, with the same request id.
  refusals = 1;
  requests.length = 0;
  assert.equal(rcode(await h.handle(signMessage(update('example.com', 'b', 2), key).bytes, 'r')), 0);
  assert.equal(requests.length, 2);
  assert.equal(requests[0]!.id, requests[1]!.id);
  // Refused twice (this replica's view never shows the newer content): SERVFAIL, the client retries.
  refusals = 2;
  requests.length = 0;
  const third = await h.handle(signMessage(update('example.com', 'c', 3), key).bytes, 'r');
  assert.equal(rcode(third), UpdateRcode.SERVFAIL);
  assert.equal(requests.length, 2);
  // A new RRset is expected absent.
  const empty = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1 });
  requests.length = 0;
  assert.equal(rcode(await empty.handle(signMessage(update('example.com', 'd', 4), key).bytes, 'r')), 0);
  assert.equal(requests[0]!.changes[0]!.expect, 'absent');
});

/** An UPDATE adding one TXT at `name`, with prerequisites `prereq` (RFC 2136 §2.4). */
function updateAt(origin: string, name: string, value: string, id = 9, prereq: Message['answers'] = []) {
  return encodeMessage(
    queryMessage(`${origin}.`, RRType.SOA, {
      id,
      opcode: Opcode.UPDATE,
      answers: prereq,
      authority: [
        {
          name,
          type: RRType.TXT,
          class: RRClass.IN,
          ttl: 60,
          data: parseRdata('TXT', `"${value}"`, `${origin}.`),
        },
      ] as Message['authority'],
    }),
  );
}

test('one zone whose writes are stuck holds at most its share: another zone is still written', {
  timeout: 30_000,
}, async () => {
  const { writer, applied, release } = heldWriter((_id, name) => name.endsWith('example.com.'));
  const h = new UpdateHandler(table('example.com', 'example.org'), {
    writer: () => writer,
    settleMs: 1,
    maxPending: 10,
    maxPendingPerZone: 3,
    maxPendingPerKey: 1000,
  });
  const stuck = Array.from({ length: 12 }, (_, i) =>
    h.handle(signMessage(update('example.com', `s${i}`, i), key).bytes, 'a'),
  );
  await ticks();
  assert.equal(h.pendingWrites, 3);
  const other = await h.handle(signMessage(update('example.org', 'o', 99), key).bytes, 'b');
  assert.equal(rcode(other), UpdateRcode.NOERROR);
  for (const a of await Promise.all(stuck.slice(3))) assert.equal(rcode(a), UpdateRcode.REFUSED);
  release();
  await until(() => applied.length === 3);
  release();
  await until(() => applied.length === 4);
  release();
  for (const a of await Promise.all(stuck.slice(0, 3))) assert.equal(rcode(a), UpdateRcode.NOERROR);
});

test('one key whose writes are stuck holds at most its share', { timeout: 30_000 }, async () => {
  const { writer, release } = heldWriter(() => true);
  const h = new UpdateHandler(table('example.com', 'example.org', 'example.net'), {
    writer: () => writer,
    settleMs: 1,
    maxPendingPerZone: 1000,
    maxPendingPerKey: 2,
  });
  const first = h.handle(signMessage(update('example.com', 'a', 1), key).bytes, 'a');
  const second = h.handle(signMessage(update('example.org', 'b', 2), key).bytes, 'a');
  const third = await h.handle(signMessage(update('example.net', 'c', 3), key).bytes, 'a');
  assert.equal(rcode(third), UpdateRcode.REFUSED);
  release();
  await ticks();
  release();
  assert.equal(rcode(await first), UpdateRcode.NOERROR);
  assert.equal(rcode(await second), UpdateRcode.NOERROR);
});

test('stop answers the UPDATEs waiting behind a write that never settles, and every later one', {
  timeout: 30_000,
}, async () => {
  const applied: string[] = [];
  const writer = {
    apply: (_c: string, request: WriteRequest) => {
      applied.push(request.id ?? '');
      return new Promise(() => {});
    },
  } as unknown as RecordWriter;
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 60_000 });
  const waiting = Array.from({ length: 4 }, (_, i) =>
    h.handle(signMessage(update('example.com', `w${i}`, i), key).bytes, 'a'),
  );
  await until(() => applied.length === 1);
  h.stop();
  for (const a of await Promise.all(waiting)) assert.equal(rcode(a), UpdateRcode.SERVFAIL);
  assert.equal(applied.length, 1, 'nothing queued was written after stop');
  const later = await h.handle(signMessage(update('example.com', 'late', 50), key).bytes, 'a');
  assert.equal(rcode(later), UpdateRcode.SERVFAIL);
});

test('an UPDATE whose written record set the zone refused is answered SERVFAIL with why, not NOERROR after the wait', {
  timeout: 30_000,
}, async () => {
  const { writer } = heldWriter(() => false);
  const asked: string[] = [];
  const h = new UpdateHandler(table('example.com'), {
    writer: () => writer,
    // Long: the answer must not come from this deadline (the test's timeout guards).
    settleMs: 600_000,
    rejected: (object) => {
      asked.push(object);
      return 'x.dyn.example.com. TXT cannot coexist with the CNAME published by dns/other';
    },
  });
  const answer = await h.handle(signMessage(update('example.com', 'r'), key).bytes, 'a');
  assert.equal(rcode(answer), UpdateRcode.SERVFAIL);
  assert.match(asked[0]!, /^dns\//);
});

test('every authenticated UPDATE takes the namespace rate: a failed prerequisite and a no-op too', async () => {
  let charged = 0;
  let applied = 0;
  let wait = 0;
  const writer = {
    apply: async () => {
      applied++;
      return { namespace: 'dns', replayed: false, changes: [] };
    },
    rateWait: () => wait,
    charge: () => {
      charged++;
    },
  } as unknown as RecordWriter;
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1 });
  // §2.4.1 "RRset exists (value independent)" of an RRset that does not exist: NXRRSET.
  const exists = [
    {
      name: 'absent.dyn.example.com.',
      type: RRType.TXT,
      class: RRClass.ANY,
      ttl: 0,
      data: { type: RRType.TXT, data: new Uint8Array(0) },
    },
  ] as unknown as Message['answers'];
  const failed = await h.handle(
    signMessage(updateAt('example.com', 'x.dyn.example.com.', 'p', 1, exists), key).bytes,
    'a',
  );
  assert.equal(rcode(failed), UpdateRcode.NXRRSET);
  assert.equal(charged, 1);
  assert.equal(applied, 0);
  // A spent rate: refused before it is evaluated or written.
  wait = 3;
  const limited = await h.handle(signMessage(update('example.com', 'q', 2), key).bytes, 'a');
  assert.equal(rcode(limited), UpdateRcode.REFUSED);
  assert.equal(applied, 0);
  assert.equal(charged, 1);
});

test('a write below an NS cut inside the zone is REFUSED by the record writer, not stored and never served', {
  timeout: 30_000,
}, async () => {
  const cut = recordSet('dns', 'cut', {
    name: 'sub.dyn.example.com.',
    type: 'NS',
    records: ['ns.elsewhere.net.'],
  });
  const c = new Catalog();
  c.setClass(zoneClass('builtin', ['ns1.example.com.']));
  c.setRecord(cut);
  c.setZone(zone('dns', 'example-com', 'example.com'));
  const store = new MemoryStore();
  const dir = await mkdtemp(path.join(tmpdir(), 'zk-update-'));
  const writes = await FolderWriteStore.open(dir, store);
  try {
    const coordinator = new WriteCoordinator({
      store: writes,
      gate: catalogGate(c, store),
      credentials: {
        get: (name) => ({ name, kind: 'tsig', namespace: 'dns' }),
        quota: () => ({ maxRecordSets: 100, requestsPerSecond: 100, burst: 100 }),
      },
    });
    await coordinator.start();
    const h = new UpdateHandler(tableWith(['example.com'], [cut]), {
      writer: () => coordinator,
      settleMs: 600_000,
    });
    const answer = await h.handle(
      signMessage(updateAt('example.com', 'x.sub.dyn.example.com.', 'below'), key).bytes,
      'a',
    );
    assert.equal(rcode(answer), UpdateRcode.REFUSED);
    assert.equal(store.list('DNSRecordSet').length, 0);
  } finally {
    await writes.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('RFC 2136 §3.4.2.2 and a CNAME the served zone does not show yet: never NOERROR for a record never served, and no wait', {
  timeout: 30_000,
}, async () => {
  // A manifest CNAME at x.dyn.example.com. (the name the key may add TXT to).
  const cname = recordSet('dns', 'm-cname', {
    name: 'x.dyn.example.com.',
    type: 'CNAME',
    records: ['edge.example.net.'],
  });
  const w = await gatedWriter({
    classes: [zoneClass('builtin', ['ns1.example.com.'])],
    zones: [zone('dns', 'example-com', 'example.com')],
    records: [cname],
    credentials: {
      get: (name) => ({ name, kind: 'tsig', namespace: 'dns' }),
      quota: () => ({ maxRecordSets: 100, requestsPerSecond: 100, burst: 100 }),
    },
  });
  try {
    const logged: string[] = [];
    const handler = (served: DNSRecordSet[]) =>
      new UpdateHandler(tableWith(['example.com'], served), {
        writer: () => w.writer,
        // Waiting for the change to be served would outlast the test.
        settleMs: 600_000,
        log: (_level, message, fields) => logged.push(`${message} ${JSON.stringify(fields ?? {})}`),
      });
    // Served: the TXT is ignored as §3.4.2.2 prescribes, nothing is written (NOERROR).
    const ignored = await handler([cname]).handle(
      signMessage(update('example.com', 'served', 1), key).bytes,
      'a',
    );
    assert.equal(rcode(ignored), UpdateRcode.NOERROR);
    assert.equal(w.store.list('DNSRecordSet').length, 0);
    // Not served yet (the zone's model has it, the served zone not): the record writer refuses the
    // TXT the zone would never serve beside the older CNAME. REFUSED at once, nothing stored.
    const refused = await handler([]).handle(
      signMessage(update('example.com', 'pending', 2), key).bytes,
      'a',
    );
    assert.equal(rcode(refused), UpdateRcode.REFUSED);
    assert.equal(w.store.list('DNSRecordSet').length, 0);
    assert.match(logged.join('\n'), /NAME_CONFLICT/);
  } finally {
    await w.close();
  }
});

test("the sender's fudge counts up to the server's 300 s: a message signed long ago with a large fudge is BADTIME", async () => {
  const { writer, applied } = heldWriter(() => false);
  let now = 1_800_000_000;
  const h = new UpdateHandler(table('example.com'), { writer: () => writer, settleMs: 1, now: () => now });
  // Signed 16 minutes ago with fudge 7200: inside the sender's window, outside the server's.
  const old = signMessage(update('example.com', 'old', 1), key, { time: now - 960, fudge: 7200 }).bytes;
  const answer = await h.handle(old, 'a');
  assert.equal(rcode(answer), UpdateRcode.NOTAUTH);
  assert.equal(readTsig(answer!)?.record.error, 18, 'BADTIME');
  assert.equal(applied.length, 0);
  // Within 300 s it is accepted, whatever its fudge; then refused as a replay for as long as it is
  // accepted at all: seen first at the window's start, replayed at its end.
  const signedAt = now;
  const fresh = signMessage(update('example.com', 'fresh', 2), key, { time: signedAt, fudge: 7200 }).bytes;
  now = signedAt - 300;
  assert.equal(rcode(await h.handle(fresh, 'a')), UpdateRcode.NOERROR);
  now = signedAt + 300;
  assert.equal(rcode(await h.handle(fresh, 'a')), UpdateRcode.REFUSED);
  now = signedAt + 301;
  const late = await h.handle(fresh, 'a');
  assert.equal(readTsig(late!)?.record.error, 18, 'BADTIME once the window is over');
  assert.equal(applied.length, 1);
});
