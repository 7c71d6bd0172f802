import assert from 'node:assert/strict';
import { test } from 'node:test';
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
