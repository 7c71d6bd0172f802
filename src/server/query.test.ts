import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildQuery as buildClientQuery } from '../../test/support/dns-client.ts';
import { buildQuery, bytes, header, u16 } from '../../test/support/dns-fuzz.ts';
import { Rcode } from '../dns/message.ts';
import { RRType } from '../dns/rrtype.ts';
import { parseQuery } from './query.ts';

test('other opcodes get NOTIMP with the question and the OPT echoed (RFC 1035 §4.1.1, RFC 6891 §7)', () => {
  // Regression: NOTIMP was returned before the question and OPT were read, so the response had neither.
  const notify = buildQuery({
    id: 7,
    name: 'example.com.',
    type: RRType.SOA,
    flags: 4 << 11,
    edns: { dnssecOk: true },
  });
  const parsed = parseQuery(notify);
  assert.equal(parsed.kind, 'error');
  if (parsed.kind !== 'error') return;
  assert.equal(parsed.rcode, Rcode.NOTIMP);
  assert.equal(parsed.opcode, 4);
  assert.equal(parsed.question?.qname, 'example.com.');
  assert.equal(parsed.question?.qtype, RRType.SOA);
  assert.deepEqual(parsed.edns, { udpSize: 1232, version: 0, dnssecOk: true });
});

test('other opcodes stay NOTIMP when the message is also malformed, echoing what could be read', () => {
  const noQuestion = parseQuery(bytes(header({ flags: 5 << 11, qd: 0 })));
  assert.deepEqual(noQuestion.kind === 'error' && [noQuestion.rcode, noQuestion.question], [
    Rcode.NOTIMP,
    undefined,
  ]);
  const badName = parseQuery(bytes(header({ flags: 2 << 11 }), [0xc0, 12], u16(1), u16(1)));
  assert.deepEqual(badName.kind === 'error' && [badName.rcode, badName.question], [Rcode.NOTIMP, undefined]);
  const trailing = parseQuery(bytes(buildQuery({ name: 'example.com.', type: 1, flags: 1 << 11 }), [0]));
  assert.ok(
    trailing.kind === 'error' &&
      trailing.rcode === Rcode.NOTIMP &&
      trailing.question?.qname === 'example.com.',
  );
});

describe('EDNS Client Subnet (RFC 7871 §6)', () => {
  const ecs = (data: number[]) => ({ code: 8, data: Uint8Array.from(data) });
  const withOptions = (...options: { code: number; data: Uint8Array }[]) =>
    parseQuery(
      buildClientQuery({ name: 'www.example.com.', type: RRType.A, edns: { udpSize: 1232, options } }),
    );
  const rcodeOf = (p: ReturnType<typeof parseQuery>) => (p.kind === 'error' ? p.rcode : p.kind);

  test('reads family, source prefix, scope and the address octets; other options are skipped', () => {
    const p = withOptions(
      { code: 10, data: Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]) },
      ecs([0, 1, 22, 0, 198, 51, 100]),
    );
    assert.equal(p.kind, 'query');
    if (p.kind !== 'query') return;
    assert.deepEqual(p.query.edns?.clientSubnet, {
      family: 1,
      sourcePrefix: 22,
      scopePrefix: 0,
      address: Uint8Array.from([198, 51, 100]),
    });
    const v6 = withOptions(ecs([0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0]));
    assert.equal(v6.kind === 'query' && v6.query.edns?.clientSubnet?.address.length, 7);
    const zero = withOptions(ecs([0, 1, 0, 0]));
    assert.equal(zero.kind === 'query' && zero.query.edns?.clientSubnet?.sourcePrefix, 0);
    const none = withOptions({ code: 10, data: Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]) });
    assert.equal(none.kind === 'query' && none.query.edns?.clientSubnet, undefined);
  });

  test('malformed subnets are FORMERR, echoing the question and OPT', () => {
    const cases: [string, ReturnType<typeof parseQuery>][] = [
      ['too many address octets', withOptions(ecs([0, 1, 24, 0, 192, 0, 2, 0]))],
      ['too few address octets', withOptions(ecs([0, 1, 24, 0, 192, 0]))],
      ['bits set beyond the source prefix', withOptions(ecs([0, 1, 22, 0, 198, 51, 101]))],
      ['unknown family', withOptions(ecs([0, 3, 8, 0, 1]))],
      ['IPv4 prefix over 32', withOptions(ecs([0, 1, 33, 0, 1, 2, 3, 4, 0]))],
      ['shorter than its fixed fields', withOptions(ecs([0, 1, 0]))],
      ['two Client Subnet options', withOptions(ecs([0, 1, 0, 0]), ecs([0, 1, 0, 0]))],
    ];
    for (const [what, p] of cases) {
      assert.equal(rcodeOf(p), Rcode.FORMERR, what);
      assert.ok(p.kind === 'error' && p.question?.qname === 'www.example.com.' && p.edns, what);
    }
    // An option whose length runs past the OPT RDATA is ignored (options were never checked).
    const q = buildClientQuery({
      name: 'www.example.com.',
      type: RRType.A,
      edns: { udpSize: 1232, options: [ecs([0, 1, 0, 0])] },
    });
    const broken = Uint8Array.from(q);
    broken[broken.length - 5] = 9; // the option length: 4 → 9
    const ignored = parseQuery(broken);
    assert.ok(ignored.kind === 'query' && ignored.query.edns && !ignored.query.edns.clientSubnet);
  });
});
