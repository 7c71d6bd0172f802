import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRdata, printRdata } from '../dns/rdata.ts';
import { RRType } from '../dns/rrtype.ts';
import { patchDiff, type ServedRRset } from './zone-snapshot.ts';

const ORIGIN = 'example.org.';

function servedTxt(...values: string[]): ServedRRset {
  return {
    owner: `www.${ORIGIN}`,
    type: RRType.TXT,
    ttl: 300,
    rdata: values.map((v) => parseRdata('TXT', v, ORIGIN)),
    wire: undefined,
  };
}

const printed = (rrsets: ServedRRset[]) => rrsets.flatMap((r) => r.rdata.map((d) => printRdata(d)));

test('an IXFR diff carries a change of text case: TXT "ABC" replaced by "abc" (RFC 1995 §4)', () => {
  const old = servedTxt('"ABC"', '"keep"');
  const { removed, added } = patchDiff(() => old, {
    deletes: [],
    upserts: [{ owner: `www.${ORIGIN}`, type: 'TXT', ttl: 300, rdata: servedTxt('"abc"', '"keep"').rdata }],
  });
  assert.deepEqual(printed(removed), ['"ABC"']);
  assert.deepEqual(printed(added), ['"abc"']);
});

test('an IXFR diff leaves out a name that differs only in case, as the same record', () => {
  const old: ServedRRset = {
    owner: ORIGIN,
    type: RRType.MX,
    ttl: 300,
    rdata: [parseRdata('MX', '10 Mail.example.org.', ORIGIN)],
    wire: undefined,
  };
  const { removed, added } = patchDiff(() => old, {
    deletes: [],
    upserts: [
      { owner: ORIGIN, type: 'MX', ttl: 300, rdata: [parseRdata('MX', '10 mail.example.org.', ORIGIN)] },
    ],
  });
  assert.deepEqual([removed.length, added.length], [0, 0]);
});
