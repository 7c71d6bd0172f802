import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  decodeMessage,
  encodeMessage,
  type Message,
  Opcode,
  queryMessage,
  Rcode,
  type ResourceRecord,
} from '../../dns/message.ts';
import type { Rdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import {
  keyring,
  parseTsigKey,
  readTsig,
  signMessage,
  TsigErrorCode,
  TsigStreamVerifier,
  verifyMessage,
} from '../../dns/tsig.ts';
import { Registry } from '../../metrics/registry.ts';
import type { RRsetData } from '../../zones/rrset.ts';
import type { ResolvedTransfers } from '../../zones/transfers.ts';
import { ZoneSnapshot } from '../zone-snapshot.ts';
import { ZoneTable } from '../zone-table.ts';
import { TransferHandler } from './transfer-handler.ts';
import { TransferPolicy } from './transfer-policy.ts';

const ORIGIN = 'example.com.';
const SOA = {
  ttl: 3600,
  mname: 'ns1.example.com.',
  rname: 'hostmaster.example.com.',
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 300,
};
const SECRET = Buffer.alloc(32, 42).toString('base64');
const KEY = parseTsigKey({ name: 'transfer-key', algorithm: 'hmac-sha256', secret: SECRET });
const WRONG_KEY = parseTsigKey({
  name: 'transfer-key',
  algorithm: 'hmac-sha256',
  secret: Buffer.alloc(32, 1).toString('base64'),
});

const a = (owner: string, ...addresses: string[]): RRsetData => ({
  owner,
  type: 'A',
  ttl: 300,
  rdata: addresses.map((address) => ({ type: 'A', address })),
});

function policy(extra: Partial<ResolvedTransfers> = {}): TransferPolicy {
  return new TransferPolicy({
    allowFrom: ['127.0.0.0/8', '2001:db8::/32'],
    requireTsig: true,
    keys: [{ name: 'transfer-key', algorithm: 'hmac-sha256', secret: SECRET }],
    notify: [],
    journalSize: 10,
    ...extra,
  });
}

function setup(options: { policy?: TransferPolicy | null; rrsets?: RRsetData[] } = {}) {
  const table = new ZoneTable();
  const zone = ZoneSnapshot.build(
    ORIGIN,
    SOA,
    10,
    options.rrsets ?? [
      { owner: ORIGIN, type: 'NS', ttl: 3600, rdata: [{ type: 'NS', host: 'ns1.example.com.' }] },
      a('ns1.example.com.', '192.0.2.53'),
      a('www.example.com.', '192.0.2.1', '192.0.2.2'),
      a('old.example.com.', '192.0.2.9'),
    ],
    options.policy === null ? undefined : (options.policy ?? policy()),
  );
  table.set(zone);
  const registry = new Registry();
  const handler = new TransferHandler(table, { registry });
  const count = (type: string, result: string) =>
    registry
      .snapshot()
      .counters.zonekeeper_transfers_total?.find(([l]) => l[0] === type && l[1] === result)?.[1] ?? 0;
  return { table, zone, handler, count };
}

function request(type: number, extra: Partial<Message> = {}, name = ORIGIN): Uint8Array {
  return encodeMessage(queryMessage(name, type, { id: 0x1234, ...extra }));
}

function soaRecord(serial: number): ResourceRecord {
  return { name: ORIGIN, type: RRType.SOA, class: 1, ttl: SOA.ttl, data: { type: 'SOA', ...SOA, serial } };
}

const ixfr = (serial: number) => request(RRType.IXFR, { authority: [soaRecord(serial)] });

/** Sends a signed request and returns the records of the verified response stream. */
function signedTransfer(
  handler: TransferHandler,
  bytes: Uint8Array,
  tcp = true,
): { messages: Uint8Array[]; records: ResourceRecord[] } {
  const signed = signMessage(bytes, KEY);
  const messages = handler.handle(signed.bytes, '127.0.0.1', tcp);
  const verifier = new TsigStreamVerifier(keyring([KEY]), signed.mac);
  const records: ResourceRecord[] = [];
  for (const m of messages) {
    const v = verifier.verify(m);
    assert.ok(v.ok, JSON.stringify(v));
    const decoded = decodeMessage(v.stripped);
    assert.equal(decoded.rcode, Rcode.NOERROR);
    assert.equal(decoded.id, 0x1234);
    assert.ok(decoded.qr && decoded.aa);
    assert.equal(decoded.questions[0]?.name, ORIGIN, 'every message carries the question (RFC 5936 §2.2.1)');
    records.push(...decoded.answers);
  }
  assert.ok(verifier.end().ok, 'the last message is signed');
  return { messages, records };
}

/** `SOA <serial>`, `+A owner address` style summary of a transfer. */
function summary(records: ResourceRecord[]): string[] {
  return records.map((rr) => {
    const d = rr.data as Rdata;
    if (d.type === 'SOA') return `SOA ${d.serial}`;
    if (d.type === 'A') return `A ${rr.name} ${d.address}`;
    return `${d.type} ${rr.name}`;
  });
}

describe('TransferHandler.isTransfer', () => {
  test('AXFR and IXFR queries, and signed SOA queries (a secondary refresh check)', () => {
    assert.equal(TransferHandler.isTransfer(request(RRType.AXFR)), true);
    assert.equal(TransferHandler.isTransfer(ixfr(1)), true);
    assert.equal(TransferHandler.isTransfer(request(RRType.SOA)), false, 'unsigned: the query path');
    assert.equal(TransferHandler.isTransfer(signMessage(request(RRType.SOA), KEY).bytes), true);
    const withOpt = request(RRType.SOA, {
      edns: { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] },
    });
    assert.equal(TransferHandler.isTransfer(withOpt), false, 'EDNS alone is not TSIG');
    assert.equal(TransferHandler.isTransfer(signMessage(withOpt, KEY).bytes), true);
    assert.equal(TransferHandler.isTransfer(signMessage(request(RRType.A), KEY).bytes), false);
    assert.equal(TransferHandler.isTransfer(request(RRType.AXFR, { opcode: Opcode.NOTIFY })), false);
    const cut = signMessage(request(RRType.SOA), KEY).bytes.subarray(0, 40);
    assert.equal(TransferHandler.isTransfer(cut), false, 'malformed: left to the query path');
  });
});

describe('AXFR (RFC 5936)', () => {
  test('SOA, every RRset, SOA; signed; counted', () => {
    const { handler, count } = setup();
    const { records } = signedTransfer(handler, request(RRType.AXFR));
    const s = summary(records);
    assert.equal(s[0], 'SOA 10');
    assert.equal(s.at(-1), 'SOA 10');
    assert.deepEqual(s.slice(1, -1).sort(), [
      'A ns1.example.com. 192.0.2.53',
      'A old.example.com. 192.0.2.9',
      'A www.example.com. 192.0.2.1',
      'A www.example.com. 192.0.2.2',
      'NS example.com.',
    ]);
    assert.equal(count('AXFR', 'ok'), 1);
  });

  test('a large zone is split into messages of at most 16 KiB, each signed, nothing lost', () => {
    const rrsets: RRsetData[] = [];
    for (let i = 0; i < 3000; i++) {
      rrsets.push({
        owner: `t${i}.example.com.`,
        type: 'TXT',
        ttl: 300,
        rdata: [{ type: 'TXT', strings: ['x'.repeat(100)] }],
      });
    }
    const { handler } = setup({ rrsets });
    const { messages, records } = signedTransfer(handler, request(RRType.AXFR));
    assert.ok(messages.length > 10, `${messages.length} messages`);
    for (const m of messages) assert.ok(m.length <= 16_384 + 200, `${m.length} octets`);
    assert.equal(records.length, 3002);
    assert.equal(new Set(records.filter((r) => r.type === RRType.TXT).map((r) => r.name)).size, 3000);
  });

  test('over UDP: FORMERR (RFC 5936 §4.2)', () => {
    const { handler, count } = setup();
    const [reply] = handler.handle(signMessage(request(RRType.AXFR), KEY).bytes, '127.0.0.1', false);
    assert.equal(decodeMessage(reply!).rcode, Rcode.FORMERR);
    assert.equal(count('AXFR', 'formerr'), 1);
  });
});

describe('IXFR (RFC 1995)', () => {
  /** Serial 10 → 11: www changes one address; 11 → 12: old goes, new comes. */
  function changed(journalSize = 10) {
    const s = setup({ policy: policy({ journalSize }) });
    s.zone.patch({ upserts: [a('www.example.com.', '192.0.2.1', '192.0.2.3')], deletes: [] }, 11, SOA);
    s.zone.patch(
      { upserts: [a('new.example.com.', '192.0.2.7')], deletes: [{ owner: 'old.example.com.', type: 'A' }] },
      12,
      SOA,
    );
    return s;
  }

  test('from a serial in the journal: each change as old SOA, deletions, new SOA, additions (§4)', () => {
    const { handler, count } = changed();
    assert.deepEqual(summary(signedTransfer(handler, ixfr(10)).records), [
      'SOA 12',
      'SOA 10',
      'A www.example.com. 192.0.2.2',
      'SOA 11',
      'A www.example.com. 192.0.2.3',
      'SOA 11',
      'A old.example.com. 192.0.2.9',
      'SOA 12',
      'A new.example.com. 192.0.2.7',
      'SOA 12',
    ]);
    assert.deepEqual(summary(signedTransfer(handler, ixfr(11)).records), [
      'SOA 12',
      'SOA 11',
      'A old.example.com. 192.0.2.9',
      'SOA 12',
      'A new.example.com. 192.0.2.7',
      'SOA 12',
    ]);
    assert.equal(count('IXFR', 'ok'), 2);
  });

  test('up to date or ahead: the current SOA alone', () => {
    const { handler } = changed();
    assert.deepEqual(summary(signedTransfer(handler, ixfr(12)).records), ['SOA 12']);
    assert.deepEqual(summary(signedTransfer(handler, ixfr(13)).records), ['SOA 12']);
  });

  test('older than the journal: the whole zone, AXFR-style, counted as ok-axfr-fallback', () => {
    const { handler, count } = changed(1);
    const s = summary(signedTransfer(handler, ixfr(10)).records);
    assert.equal(s[0], 'SOA 12');
    assert.doesNotMatch(s[1]!, /^SOA/, 'AXFR-style: no old SOA follows the first');
    assert.equal(s.at(-1), 'SOA 12');
    assert.ok(s.includes('A new.example.com. 192.0.2.7') && !s.includes('A old.example.com. 192.0.2.9'));
    assert.equal(count('IXFR', 'ok-axfr-fallback'), 1);
    // The one change the journal holds is still sent incrementally.
    assert.equal(summary(signedTransfer(handler, ixfr(11)).records)[1], 'SOA 11');
  });

  test('a rebuilt zone (the journal starts again) answers older serials AXFR-style', () => {
    const { table, handler } = changed();
    table.set(ZoneSnapshot.build(ORIGIN, SOA, 13, [a('www.example.com.', '192.0.2.1')], policy()));
    const s = summary(signedTransfer(handler, ixfr(12)).records);
    assert.deepEqual(s, ['SOA 13', 'A www.example.com. 192.0.2.1', 'SOA 13']);
  });

  test('over UDP: the SOA alone, and the client retries over TCP (§2)', () => {
    const { handler, count } = changed();
    const { records } = signedTransfer(handler, ixfr(10), false);
    assert.deepEqual(summary(records), ['SOA 12']);
    assert.equal(count('IXFR', 'ok'), 1);
  });

  test("without the client's SOA in the authority section: FORMERR", () => {
    const { handler, count } = changed();
    const [reply] = handler.handle(signMessage(request(RRType.IXFR), KEY).bytes, '127.0.0.1', true);
    assert.equal(decodeMessage(reply!).rcode, Rcode.FORMERR);
    assert.equal(count('IXFR', 'formerr'), 1);
  });
});

describe('refusals', () => {
  const rcodeOf = (reply: Uint8Array | undefined) => decodeMessage(reply!).rcode;

  test('a source outside allowFrom: REFUSED, even with the right key; IPv4-mapped sources match IPv4 networks', () => {
    const { handler, count } = setup();
    const signed = () => signMessage(request(RRType.AXFR), KEY).bytes;
    assert.equal(rcodeOf(handler.handle(signed(), '192.0.2.1', true)[0]), Rcode.REFUSED);
    assert.equal(rcodeOf(handler.handle(signed(), undefined, true)[0]), Rcode.REFUSED);
    assert.equal(count('AXFR', 'refused'), 2);
    assert.ok(handler.handle(signed(), '::ffff:127.0.0.1', true).length > 0);
    assert.equal(count('AXFR', 'ok'), 1);
  });

  test('unsigned when TSIG is required: REFUSED; allowed when it is not', () => {
    const { handler, count } = setup();
    assert.equal(rcodeOf(handler.handle(request(RRType.AXFR), '127.0.0.1', true)[0]), Rcode.REFUSED);
    assert.equal(count('AXFR', 'unsigned'), 1);
    const open = setup({ policy: policy({ requireTsig: false }) });
    const messages = open.handler.handle(request(RRType.AXFR), '127.0.0.1', true);
    assert.equal(decodeMessage(messages[0]!).answers[0]?.type, RRType.SOA);
  });

  test('a wrong secret: NOTAUTH with TSIG BADSIG; an unknown key: BADKEY (RFC 8945 §5.2)', () => {
    const { handler, count } = setup();
    const bad = handler.handle(signMessage(request(RRType.AXFR), WRONG_KEY).bytes, '127.0.0.1', true);
    assert.equal(bad.length, 1);
    assert.equal(rcodeOf(bad[0]), Rcode.NOTAUTH);
    assert.equal(readTsig(bad[0]!)?.record.error, TsigErrorCode.BADSIG);
    const other = parseTsigKey({ name: 'other-key', algorithm: 'hmac-sha256', secret: SECRET });
    const unknown = handler.handle(signMessage(ixfr(1), other).bytes, '127.0.0.1', true);
    assert.equal(readTsig(unknown[0]!)?.record.error, TsigErrorCode.BADKEY);
    assert.equal(count('AXFR', 'badsig'), 1);
    assert.equal(count('IXFR', 'badkey'), 1);
  });

  test('a zone not served: NOTAUTH; a zone without transfers: REFUSED', () => {
    const { handler, count } = setup();
    const elsewhere = signMessage(request(RRType.AXFR, {}, 'example.net.'), KEY).bytes;
    assert.equal(rcodeOf(handler.handle(elsewhere, '127.0.0.1', true)[0]), Rcode.NOTAUTH);
    const below = signMessage(request(RRType.AXFR, {}, 'www.example.com.'), KEY).bytes;
    assert.equal(rcodeOf(handler.handle(below, '127.0.0.1', true)[0]), Rcode.NOTAUTH, 'not a zone apex');
    assert.equal(count('AXFR', 'notauth'), 2);
    const closed = setup({ policy: null });
    const reply = closed.handler.handle(signMessage(request(RRType.AXFR), KEY).bytes, '127.0.0.1', true);
    assert.equal(rcodeOf(reply[0]), Rcode.REFUSED);
  });

  test('an error answer to an EDNS request carries OPT (RFC 6891 §7), the question, and no records', () => {
    const { handler } = setup();
    const edns = { udpSize: 4096, extendedRcode: 0, version: 0, dnssecOk: true, options: [] };
    const reply = decodeMessage(handler.handle(request(RRType.AXFR, { edns }), '192.0.2.1', true)[0]!);
    assert.equal(reply.rcode, Rcode.REFUSED);
    assert.equal(reply.edns?.dnssecOk, true);
    assert.equal(reply.questions[0]?.name, ORIGIN);
    assert.equal(reply.answers.length + reply.authority.length + reply.additional.length, 0);
  });
});

describe('signed SOA queries (the refresh check of a secondary)', () => {
  function ask(handler: TransferHandler, bytes: Uint8Array, tcp = false) {
    const signed = signMessage(bytes, KEY);
    const [reply] = handler.handle(signed.bytes, '203.0.113.9', tcp);
    assert.ok(reply);
    const verified = verifyMessage(reply, keyring([KEY]), { requestMac: signed.mac });
    return { reply, verified };
  }

  test('are answered like the query path would, and signed with the key of the request (RFC 8945 §5.3)', () => {
    const { handler, zone, count } = setup();
    zone.patch({ upserts: [a('www.example.com.', '192.0.2.5')], deletes: [] }, 11, SOA);
    const edns = { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
    const { verified } = ask(handler, request(RRType.SOA, { edns }));
    assert.ok(verified.ok, JSON.stringify(verified));
    const m = decodeMessage(verified.stripped);
    assert.equal(m.rcode, Rcode.NOERROR);
    assert.ok(m.aa && m.qr);
    assert.equal(m.id, 0x1234);
    assert.deepEqual(summary(m.answers), ['SOA 11']);
    assert.ok(m.edns, 'OPT kept, before the TSIG');
    assert.equal(count('SOA', 'ok'), 1);
  });

  test('below the apex: the negative answer with the SOA, signed', () => {
    const { handler } = setup();
    const { verified } = ask(handler, request(RRType.SOA, {}, 'nope.example.com.'));
    assert.ok(verified.ok);
    const m = decodeMessage(verified.stripped);
    assert.equal(m.rcode, Rcode.NXDOMAIN);
    assert.deepEqual(summary(m.authority), ['SOA 10']);
  });

  test('a wrong secret: BADSIG; a zone without transfer keys or not served: BADKEY', () => {
    const { handler, count } = setup();
    const [bad] = handler.handle(signMessage(request(RRType.SOA), WRONG_KEY).bytes, '127.0.0.1', false);
    assert.equal(decodeMessage(bad!).rcode, Rcode.NOTAUTH);
    assert.equal(readTsig(bad!)?.record.error, TsigErrorCode.BADSIG);
    assert.equal(count('SOA', 'badsig'), 1);
    const [elsewhere] = handler.handle(
      signMessage(request(RRType.SOA, {}, 'example.net.'), KEY).bytes,
      '127.0.0.1',
      false,
    );
    assert.equal(readTsig(elsewhere!)?.record.error, TsigErrorCode.BADKEY);
    const closed = setup({ policy: null });
    const [reply] = closed.handler.handle(signMessage(request(RRType.SOA), KEY).bytes, '127.0.0.1', false);
    assert.equal(readTsig(reply!)?.record.error, TsigErrorCode.BADKEY);
  });
});

describe('EDNS in transfers (RFC 6891)', () => {
  const edns = (version: number, dnssecOk = false) => ({
    udpSize: 4096,
    extendedRcode: 0,
    version,
    dnssecOk,
    options: [],
  });

  test('an AXFR or IXFR with an EDNS version other than 0: BADVERS with our version, over TCP and UDP (§6.1.3)', () => {
    const { handler, count } = setup({ policy: policy({ requireTsig: false }) });
    for (const [bytes, tcp] of [
      [request(RRType.AXFR, { edns: edns(1) }), true],
      [request(RRType.AXFR, { edns: edns(1) }), false],
      [request(RRType.IXFR, { edns: edns(2), authority: [soaRecord(1)] }), true],
    ] as const) {
      const reply = handler.respond(bytes, '127.0.0.1', tcp);
      assert.equal(reply.messages.length, 1);
      assert.equal(reply.transfer, false);
      const decoded = decodeMessage(reply.messages[0]!);
      assert.equal(decoded.rcode, Rcode.BADVERS);
      assert.equal(decoded.edns?.version, 0);
      assert.equal(decoded.answers.length, 0);
    }
    assert.equal(count('AXFR', 'badvers'), 2);
    assert.equal(count('IXFR', 'badvers'), 1);
  });

  test('every message of a transfer asked for with an OPT carries one, before the TSIG (§7)', () => {
    const rrsets: RRsetData[] = Array.from({ length: 2000 }, (_, i) => ({
      owner: `t${i}.example.com.`,
      type: 'TXT',
      ttl: 300,
      rdata: [{ type: 'TXT', strings: ['x'.repeat(100)] }],
    }));
    const { handler } = setup({ rrsets });
    const { messages, records } = signedTransfer(handler, request(RRType.AXFR, { edns: edns(0, true) }));
    assert.ok(messages.length > 5);
    for (const m of messages) {
      const decoded = decodeMessage(readTsig(m)!.stripped);
      assert.equal(decoded.edns?.version, 0);
      assert.equal(decoded.edns?.dnssecOk, true, 'DO is echoed (RFC 3225 §3)');
      assert.ok(m.length <= 16_384 + 200, `${m.length} octets`);
    }
    assert.equal(records.length, 2002);
    const plain = signedTransfer(handler, request(RRType.AXFR));
    for (const m of plain.messages) assert.equal(decodeMessage(readTsig(m)!.stripped).edns, undefined);
  });

  test("IXFR whose authority SOA is not the zone apex's: FORMERR (RFC 1995 §3)", () => {
    const { handler, count } = setup({ policy: policy({ requireTsig: false }) });
    const other = { ...soaRecord(1), name: 'other.example.com.' };
    const [reply] = handler.handle(request(RRType.IXFR, { authority: [other] }), '127.0.0.1', true);
    assert.equal(decodeMessage(reply!).rcode, Rcode.FORMERR);
    assert.equal(count('IXFR', 'formerr'), 1);
    const upper = { ...soaRecord(1), name: 'EXAMPLE.com.' };
    const ok = handler.handle(request(RRType.IXFR, { authority: [upper] }), '127.0.0.1', true);
    assert.equal(decodeMessage(ok[0]!).rcode, Rcode.NOERROR, 'the apex in any case');
  });
});

describe('respond: what the connection does with the answer', () => {
  test('only an accepted transfer is a transfer; REFUSED, NOTAUTH, FORMERR and signed SOA answers are not', () => {
    const { handler } = setup({ policy: policy({ requireTsig: false }) });
    assert.equal(handler.respond(request(RRType.AXFR), '127.0.0.1', true).transfer, true);
    for (const reply of [
      handler.respond(request(RRType.AXFR), '192.0.2.1', true),
      handler.respond(request(RRType.AXFR, {}, 'example.net.'), '127.0.0.1', true),
      handler.respond(request(RRType.IXFR), '127.0.0.1', true),
      handler.respond(signMessage(request(RRType.SOA), KEY).bytes, '192.0.2.1', true),
    ]) {
      assert.equal(reply.transfer, false);
      assert.equal(reply.messages.length, 1);
    }
  });
});
