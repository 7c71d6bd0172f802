/**
 * In-process fuzzing of parseQuery and QueryHandler.handle: crafted malformed packets (one test each)
 * and ~20,000 generated ones (FUZZ_PACKETS to change; the random generator's start value is fixed unless FUZZ_SEED is set).
 * Nothing may throw; every reply must decode, carry the request's ID with QR set, and follow the rules
 * in test/support/dns-fuzz.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allowedRcodes,
  buildQuery,
  bytes,
  clientSubnetOptionsAcceptable,
  craftedCases,
  envNumber,
  expectedProblems,
  FUZZ_ZONE_APEXES,
  fuzzPacket,
  fuzzSeed,
  header,
  hex,
  mutate,
  optBytes,
  Prng,
  questionBytes,
  replyProblems,
  rrBytes,
  type Transport,
  u32,
  VALID_QUESTIONS,
  verdictFor,
  wireName,
} from '../../test/support/dns-fuzz.ts';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { DNSRecordSet } from '../api/index.ts';
import { decodeMessage, Rcode } from '../dns/message.ts';
import { RRClass, RRType } from '../dns/rrtype.ts';
import { Registry } from '../metrics/registry.ts';
import { assembleZone } from '../zones/assemble.ts';
import { Catalog } from '../zones/catalog.ts';
import { zoneAssemblyInput } from '../zones/zone-inputs.ts';
import { ZoneAliasResolver } from './alias-resolver.ts';
import { ZoneImage } from './image/zone-image.ts';
import { parseQuery } from './query.ts';
import { QueryHandler } from './query-handler.ts';
import { ServerMetrics } from './server-metrics.ts';
import { TransferHandler } from './transfer/transfer-handler.ts';
import { TransferPolicy } from './transfer/transfer-policy.ts';
import { isUpdate, UpdateHandler } from './update/update-handler.ts';
import { ZoneApplier } from './zone-apply.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { type ServedZone, ZoneTable } from './zone-table.ts';

/** example.com as in examples/, reduced to what the generators ask about. */
function exampleTable(transfers?: TransferPolicy): ZoneTable {
  const c = new Catalog();
  c.setClass(zoneClass('builtin', ['ns1.example.com.', 'ns2.example.com.']));
  c.setZone(zone('dns', 'example-com', 'example.com'));
  const records: [string, DNSRecordSet['spec']['type'], string[]][] = [
    ['www', 'A', ['192.0.2.10', '192.0.2.11']],
    ['www', 'AAAA', ['2001:db8::10']],
    ['ns1', 'A', ['192.0.2.53']],
    ['docs', 'CNAME', ['www']],
    ['@', 'ALIAS', ['www.example.com.']],
    ['@', 'TXT', ['v=spf1 mx -all']],
    ['@', 'MX', ['10 mail', '20 mail2.example.net.']],
    ['mail', 'A', ['192.0.2.25']],
    ['*.wild', 'A', ['192.0.2.99']],
    ['legacy', 'NS', ['ns1.legacy-dns.example.net.', 'ns2.legacy-dns.example.net.']],
    ['legacy', 'DS', ['60485 13 2 d4b7d520e7bb5f0f67674a0cceb1e3e0614b93c4f9e99b8383f6a1e4469da50a']],
  ];
  for (const [i, [name, type, values]] of records.entries()) {
    const spec = { zoneRef: { name: 'example-com', namespace: 'dns' }, name, type, records: values };
    c.setRecord(recordSet('dns', `r${i}`, spec));
  }
  const assembled = assembleZone(zoneAssemblyInput(c, 'dns/example-com')!);
  const rejected = [...assembled.verdicts.values()].filter((v) => !v.accepted);
  assert.deepEqual(rejected, [], 'every fixture record is accepted');
  const table = new ZoneTable();
  table.set(ZoneSnapshot.build(assembled.origin, assembled.soa, 2026010101, assembled.rrsets, transfers));
  // The other zones of examples/ (the UPDATE verdicts name them), empty: only their apex matters here.
  for (const origin of FUZZ_ZONE_APEXES) {
    if (origin !== assembled.origin) table.set(ZoneSnapshot.build(origin, assembled.soa, 2026010101, []));
  }
  return table;
}

const table = exampleTable();
const registry = new Registry();
const handler = new QueryHandler({
  table,
  chaos: { identity: 'fuzz' },
  aliasResolver: new ZoneAliasResolver({ table }),
  metrics: new ServerMetrics(registry, table),
});

/**
 * The same zones as zone images, as a DNS thread serves them (ADR 0020 step 3): every
 * generated packet must get the same reply bytes from both.
 */
function imageTable(from: ZoneTable): ZoneTable<ServedZone> {
  const images = new ZoneTable<ServedZone>();
  const applier = new ZoneApplier(images);
  for (const zone of from.all()) {
    const image = ZoneImage.build(zone.origin, zone.soaFields, zone.serial, zone.rrsets());
    applier.replaceImage(image.buffer as ArrayBuffer, undefined);
  }
  return images;
}
const images = imageTable(table);
const imageHandler = new QueryHandler({
  table: images,
  chaos: { identity: 'fuzz' },
  aliasResolver: new ZoneAliasResolver({ table: images }),
});

/** UPDATE goes to its own handler, as DnsServer routes it; no zone here has an updatePolicy. */
const updates = new UpdateHandler(table, { writer: () => undefined });

async function ask(packet: Uint8Array, transport: Transport): Promise<Uint8Array | null> {
  if (isUpdate(packet)) return updates.handle(packet, '192.0.2.1');
  const out = handler.handle(packet, transport);
  return out instanceof Promise ? await out : out;
}

/** Every problem with how one packet is handled, for one transport. */
async function problemsOf(packet: Uint8Array, transport: Transport): Promise<string[]> {
  const verdict = verdictFor(packet);
  let parsed: ReturnType<typeof parseQuery>;
  try {
    parsed = parseQuery(packet);
  } catch (e) {
    return [`parseQuery threw ${(e as Error).stack}`];
  }
  const problems: string[] = [];
  // parseQuery does not decide UPDATEs (the update handler does): only its reply is checked.
  if (isUpdate(packet)) {
    /* nothing */
  } else if (parsed.kind !== verdict.kind)
    problems.push(`parseQuery says ${parsed.kind}, the rules say ${verdict.kind}`);
  else if (parsed.kind === 'error' && verdict.kind === 'error' && parsed.rcode !== verdict.rcode) {
    problems.push(`parseQuery rcode ${parsed.rcode}, the rules say ${verdict.rcode}`);
  }
  // The strict codec must agree that a packet it decodes as a one-question QUERY is well formed.
  let strict = false;
  try {
    const m = decodeMessage(packet);
    // The codec does not interpret EDNS options; the server refuses a malformed Client Subnet.
    strict =
      !m.qr &&
      m.opcode === 0 &&
      m.questions.length === 1 &&
      clientSubnetOptionsAcceptable(m.edns?.options ?? []);
  } catch {}
  if (strict && verdict.kind !== 'query')
    problems.push(`decodeMessage accepts it, but the verdict is ${verdict.kind}`);
  let reply: Uint8Array | null;
  try {
    reply = await ask(packet, transport);
  } catch (e) {
    return [...problems, `handle threw ${(e as Error).stack}`];
  }
  if (reply === null) {
    if (verdict.kind !== 'drop') problems.push('no reply');
  } else {
    if (!(reply instanceof Uint8Array)) problems.push(`handle returned ${typeof reply}`);
    problems.push(...replyProblems(packet, verdict, reply, transport));
  }
  return problems;
}

describe('query fuzzing: crafted malformed packets, one test each', () => {
  for (const c of craftedCases()) {
    test(c.name, async () => {
      const verdict = verdictFor(c.packet);
      if ('drop' in c.expect) assert.deepEqual(verdict, { kind: 'drop', reason: c.expect.drop });
      else assert.notEqual(verdict.kind, 'drop');
      for (const transport of ['udp', 'tcp'] as const) {
        assert.deepEqual(await problemsOf(c.packet, transport), [], `${transport}: ${hex(c.packet)}`);
        const reply = await ask(c.packet, transport);
        assert.deepEqual(expectedProblems(c.expect, reply), [], `${transport}: ${hex(c.packet)}`);
      }
    });
  }
});

describe('query fuzzing: generated packets', () => {
  test('random, mutated and crafted packets: no throw, null or a well-formed reply by the rules', async (t) => {
    const seed = fuzzSeed(0x2f6b1d3c);
    const count = envNumber('FUZZ_PACKETS', 20_000);
    t.diagnostic(`seed ${seed} (rerun with FUZZ_SEED=${seed}), ${count} packets`);
    const rng = new Prng(seed);
    const failures: string[] = [];
    const kinds = { drop: 0, error: 0, query: 0 };
    for (let i = 0; i < count && failures.length < 5; i++) {
      const transport: Transport = i % 3 === 0 ? 'tcp' : 'udp';
      const packet = fuzzPacket(rng, i & 0xffff, { tcp: transport === 'tcp' });
      kinds[verdictFor(packet).kind]++;
      const problems = await problemsOf(packet, transport);
      if (problems.length > 0) failures.push(`#${i} ${transport} ${hex(packet)}\n  ${problems.join('\n  ')}`);
    }
    t.diagnostic(`verdicts: ${JSON.stringify(kinds)}`);
    assert.deepEqual(failures, [], `seed ${seed}`);
    // The mix must reach every outcome, or the generators have gone stale.
    assert.ok(kinds.drop > 0 && kinds.error > 0 && kinds.query > 0, JSON.stringify(kinds));
  });

  test('the same packets answered from zone images: the same reply bytes as from ZoneSnapshots', async (t) => {
    const seed = fuzzSeed(0x2f6b1d3c);
    const count = envNumber('FUZZ_PACKETS', 20_000);
    const rng = new Prng(seed);
    let compared = 0;
    for (let i = 0; i < count; i++) {
      const transport: Transport = i % 3 === 0 ? 'tcp' : 'udp';
      const packet = fuzzPacket(rng, i & 0xffff, { tcp: transport === 'tcp' });
      if (isUpdate(packet)) continue;
      const expected = await handler.handle(packet, transport);
      const actual = await imageHandler.handle(packet, transport);
      if (actual === null && expected === null) continue;
      assert.deepEqual(actual, expected, `#${i} ${transport} ${hex(packet)} (seed ${seed})`);
      compared++;
    }
    for (const q of VALID_QUESTIONS) {
      for (const edns of [undefined, { dnssecOk: true }, { udpSize: 512 }]) {
        for (const transport of ['udp', 'tcp'] as const) {
          const packet = buildQuery({ id: 0x4242, name: q.name, type: q.type, class: q.class, edns });
          assert.deepEqual(
            await imageHandler.handle(packet, transport),
            await handler.handle(packet, transport),
            `${transport} ${hex(packet)}`,
          );
          compared++;
        }
      }
    }
    t.diagnostic(`${compared} replies compared`);
    assert.ok(compared > count / 2, `${compared} compared`);
  });

  test('truncation at every length of valid queries', async () => {
    for (const q of VALID_QUESTIONS) {
      for (const edns of [undefined, { dnssecOk: true }]) {
        const full = buildQuery({ id: 0x4242, name: q.name, type: q.type, class: q.class, edns });
        for (let n = 0; n <= full.length; n++) {
          for (const transport of ['udp', 'tcp'] as const) {
            const packet = full.subarray(0, n);
            assert.deepEqual(await problemsOf(packet, transport), [], `${transport} ${hex(packet)}`);
          }
        }
      }
    }
  });

  test('every opcode', async () => {
    for (let opcode = 0; opcode < 16; opcode++) {
      const packet = buildQuery({ name: 'www.example.com.', type: RRType.A, flags: opcode << 11 });
      const m = decodeMessage((await ask(packet, 'udp'))!);
      // UPDATE (5) is implemented: a zone section of type A is FORMERR (RFC 2136 §3.1.1).
      const expected = opcode === 0 ? Rcode.NOERROR : opcode === 5 ? Rcode.FORMERR : Rcode.NOTIMP;
      assert.equal(m.rcode, expected, `opcode ${opcode}`);
      assert.equal(m.opcode, opcode);
    }
  });

  test('every class', async () => {
    for (let klass = 0; klass < 0x10000; klass++) {
      const packet = buildQuery({ id: klass, name: 'www.example.com.', type: RRType.A, class: klass });
      const m = decodeMessage((await ask(packet, 'udp'))!);
      const expected = klass === RRClass.IN || klass === RRClass.ANY ? Rcode.NOERROR : Rcode.REFUSED;
      if (m.rcode !== expected || m.id !== klass || m.questions[0]?.class !== klass) {
        assert.fail(`class ${klass}: rcode ${m.rcode} (expected ${expected}), id ${m.id}`);
      }
    }
  });

  test('every query type', async () => {
    for (let type = 0; type < 0x10000; type++) {
      const packet = buildQuery({ id: type, name: 'www.example.com.', type, edns: {} });
      const problems = await problemsOf(packet, 'udp');
      if (problems.length > 0) assert.fail(`type ${type}: ${problems.join('; ')}`);
    }
    // ...with only the expected rcodes for the special ones.
    for (const type of [0, RRType.OPT, RRType.AXFR, RRType.IXFR, RRType.ANY, 0xffff]) {
      const m = decodeMessage((await ask(buildQuery({ name: 'www.example.com.', type }), 'udp'))!);
      const question = { name: 'www.example.com.', type, class: RRClass.IN };
      assert.ok(allowedRcodes(question, undefined).includes(m.rcode), `type ${type}: rcode ${m.rcode}`);
    }
  });
});

describe('transfer path fuzzing', () => {
  test('AXFR/IXFR requests, valid and mutated, with TSIG-like records: no throw, every reply decodes', (t) => {
    // A zone that allows transfers from loopback, so that requests reach the streaming code too.
    const policy = new TransferPolicy({
      allowFrom: ['127.0.0.0/8'],
      requireTsig: false,
      keys: [],
      notify: [],
      journalSize: 8,
    });
    const transfers = new TransferHandler(exampleTable(policy));
    const seed = fuzzSeed(0x7a11f00d);
    const count = Math.min(envNumber('FUZZ_PACKETS', 20_000), 200_000) / 4;
    t.diagnostic(`seed ${seed} (rerun with FUZZ_SEED=${seed}), ${count} packets`);
    const rng = new Prng(seed);
    const apex = wireName('example.com.');
    const failures: string[] = [];
    let routed = 0;
    for (let i = 0; i < count && failures.length < 5; i++) {
      const type = rng.pick([RRType.AXFR, RRType.IXFR, RRType.SOA]);
      const soa = rrBytes(
        apex,
        RRType.SOA,
        RRClass.IN,
        300,
        bytes(0, 0, u32(rng.u32()), u32(1), u32(1), u32(1), u32(1)),
      );
      // A record typed TSIG (250) with random RDATA: exercises the TSIG reader on garbage.
      const tsig = rrBytes(
        rng.chance(0.5) ? bytes(0) : wireName('key.example.'),
        250,
        255,
        0,
        rng.bytes(rng.int(80)),
      );
      const ns = type === RRType.IXFR && rng.chance(0.8) ? 1 : 0;
      const ar = (rng.chance(0.3) ? 1 : 0) + (rng.chance(0.4) ? 1 : 0);
      let p = bytes(
        header({ id: i & 0xffff, qd: 1, ns, ar }),
        questionBytes(
          rng.chance(0.8) ? apex : wireName('www.example.com.'),
          type,
          rng.chance(0.9) ? RRClass.IN : RRClass.CH,
        ),
        ns ? soa : [],
        ar >= 1 && rng.chance(0.5) ? optBytes() : [],
        ar === 2 || (ar === 1 && rng.chance(0.5)) ? tsig : [],
      );
      if (rng.chance(0.5)) p = mutate(rng, p);
      if (!TransferHandler.isTransfer(p)) continue;
      routed++;
      const tcp = rng.chance(0.5);
      let replies: Uint8Array[];
      try {
        replies = transfers.handle(p, '127.0.0.1', tcp);
      } catch (e) {
        failures.push(`#${i} threw ${(e as Error).stack}\n  ${hex(p)}`);
        continue;
      }
      if (replies.length === 0) failures.push(`#${i} no reply\n  ${hex(p)}`);
      for (const reply of replies) {
        try {
          const m = decodeMessage(reply);
          if (m.id !== ((p[0]! << 8) | p[1]!) || !m.qr)
            failures.push(`#${i} ID/QR wrong\n  ${hex(p)}\n  ${hex(reply)}`);
          if (!tcp && reply.length > 65535) failures.push(`#${i} oversized UDP reply`);
        } catch (e) {
          failures.push(`#${i} reply does not decode: ${(e as Error).message}\n  ${hex(p)}\n  ${hex(reply)}`);
        }
      }
    }
    t.diagnostic(`${routed} packets reached the transfer path`);
    assert.deepEqual(failures, [], `seed ${seed}`);
    assert.ok(routed > count / 4, `${routed} routed`);
  });
});
