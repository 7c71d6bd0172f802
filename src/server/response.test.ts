import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeMessage, queryMessage, Rcode } from '../dns/message.ts';
import { RRType } from '../dns/rrtype.ts';
import { QueryHandler } from './query-handler.ts';
import { ZoneSnapshot } from './zone-snapshot.ts';
import { ZoneTable } from './zone-table.ts';

const SOA = {
  ttl: 300,
  mname: 'ns1.example.com.',
  rname: 'h.example.com.',
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

/** Wire form of a name without compression. */
function wireName(name: string): Buffer {
  const parts = name
    .split('.')
    .filter((l) => l.length > 0)
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function occurrences(haystack: Buffer, needle: Buffer): number {
  let n = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) n++;
  return n;
}

describe('response encoding', () => {
  test('SRV targets are compression targets: their addresses in the additional section point into the RDATA', () => {
    // Regression: RDATA reused in wire form skipped the writer, so names in SRV RDATA stopped being
    // compression targets; the additional A records then spelled their owners out, and at the 512-octet
    // limit 3 of 8 addresses fitted instead of 6.
    const targets = Array.from({ length: 8 }, (_, i) => `target${i}.example.com.`);
    const table = new ZoneTable();
    table.set(
      ZoneSnapshot.build('example.com.', SOA, 1, [
        {
          owner: '_sip._tcp.example.com.',
          type: 'SRV',
          ttl: 300,
          rdata: targets.map((target, i) => ({ type: 'SRV', priority: 10, weight: i, port: 5060, target })),
        },
        ...targets.map((owner, i) => ({
          owner,
          type: 'A' as const,
          ttl: 300,
          rdata: [{ type: 'A' as const, address: `192.0.2.${i + 1}` }],
        })),
      ]),
    );
    const handler = new QueryHandler({ table });
    const ask = () =>
      Buffer.from(
        handler.handle(
          encodeMessage(queryMessage('_sip._tcp.example.com.', RRType.SRV)),
          'udp',
        ) as Uint8Array,
      );
    for (const round of ['encoded', 'from the wire cache']) {
      const response = ask();
      const message = decodeMessage(response);
      assert.equal(message.answers.length, 8, round);
      for (const target of targets) {
        const labels = wireName(target).subarray(0, 1 + target.indexOf('.')); // the first label
        assert.equal(occurrences(response, labels), 1, `${target} spelled out once (${round})`);
      }
      assert.ok(message.additional.length >= 6, `${message.additional.length} addresses fit (${round})`);
    }
  });

  test('RD is echoed for QUERY only: other opcodes get NOTIMP with RD clear (RFC 1035 §4.1.1, RFC 6895 §2)', () => {
    // Regression: a NOTIFY, UPDATE or STATUS request with RD set got NOTIMP with RD copied, though RD
    // (like RA, AA and AD) is defined for QUERY alone.
    const table = new ZoneTable();
    table.set(ZoneSnapshot.build('example.com.', SOA, 1, []));
    const handler = new QueryHandler({ table });
    for (let opcode = 0; opcode < 16; opcode++) {
      for (const edns of [false, true]) {
        const edns0 = { udpSize: 1232, extendedRcode: 0, version: 0, dnssecOk: false, options: [] };
        const request = encodeMessage(
          queryMessage('example.com.', RRType.SOA, { rd: true, opcode, ...(edns ? { edns: edns0 } : {}) }),
        );
        const reply = decodeMessage(handler.handle(request, 'udp') as Uint8Array);
        assert.equal(reply.opcode, opcode);
        assert.equal(reply.rcode, opcode === 0 ? Rcode.NOERROR : Rcode.NOTIMP, `opcode ${opcode}`);
        assert.equal(reply.rd, opcode === 0, `RD for opcode ${opcode}`);
      }
    }
    // A QUERY that is malformed (two questions) still echoes RD with its FORMERR.
    const twoQuestions = encodeMessage({
      ...queryMessage('example.com.', RRType.SOA, { rd: true }),
      questions: [
        { name: 'example.com.', type: RRType.SOA, class: 1 },
        { name: 'example.com.', type: RRType.NS, class: 1 },
      ],
    });
    const formerr = decodeMessage(handler.handle(twoQuestions, 'udp') as Uint8Array);
    assert.equal(formerr.rcode, Rcode.FORMERR);
    assert.equal(formerr.rd, true);
  });
});
