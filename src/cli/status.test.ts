import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordSet, zone, zoneClass } from '../../test/support/resources.ts';
import type { Resource } from '../api/index.ts';
import { renderStatus } from './status.ts';

/** Characters a terminal acts on (C0, DEL, C1) or that reorder or hide text (bidi and format controls). */
const UNSAFE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/u;

test('status escapes control characters in every field it prints', () => {
  // Regression: spec.name, messages and problems were printed raw, so a record set named
  // "\x1b]0;title\x07\x1b[2J" set the terminal title and cleared the screen of whoever ran `status`.
  const hostile = '\u001b]0;pwned\u0007\u001b[2J\r\u009b1m\u202eevil\u2028x';
  const cls = zoneClass(`c${hostile}`);
  const z = zone(`ns${hostile}`, `z${hostile}`, `example.com${hostile}`, { className: `c${hostile}` });
  z.status = {
    serial: 1,
    conditions: [
      {
        type: 'Ready',
        status: `False${hostile}`,
        reason: `Reason${hostile}`,
        message: `message${hostile}`,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  } as unknown as typeof z.status;
  const rs = recordSet(`ns${hostile}`, `r${hostile}`, {
    zoneRef: { name: 'z' },
    name: `www${hostile}`,
    type: `A${hostile}` as 'A',
    records: ['192.0.2.1'],
  });
  const out = renderStatus({
    items: [cls, z, rs] as Resource[],
    problems: [
      {
        file: `zone${hostile}.yaml`,
        line: 3,
        object: `DNSRecordSet x/${hostile}`,
        path: `spec.name${hostile}`,
        message: `bad${hostile}`,
        severity: 'error',
      } as never,
    ],
  });
  for (const [i, line] of out.split('\n').entries()) {
    assert.doesNotMatch(line, UNSAFE, `line ${i} holds a raw control character: ${JSON.stringify(line)}`);
  }
  // Shown escaped, so that the operator sees what is there.
  assert.match(out, /www\\x1b\]0;pwned\\x07\\x1b\[2J\\x0d\\x9b1m\\u\{202e\}evil\\u\{2028\}x/);
  assert.match(out, /bad\\x1b/);
  assert.match(out, /message\\x1b/);
});

test('status leaves ordinary text, including DNS escapes and non-ASCII letters, as it is', () => {
  const rs = recordSet('dns', 'www', {
    zoneRef: { name: 'z' },
    name: 'evil\\.apps',
    type: 'TXT',
    records: ['"x"'],
  });
  rs.status = {
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Rejected',
        message: 'café \\027 "quoted"',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  } as unknown as typeof rs.status;
  const out = renderStatus({ items: [rs] as Resource[] });
  assert.match(out, /evil\\\.apps/);
  assert.match(out, /café \\027 "quoted"/);
});

test('status lists the ExternalDNS endpoints not written, escaped like everything else it prints', () => {
  const hostile = '\u001b]0;pwned\u0007\u202eevil';
  const out = renderStatus({
    items: [],
    externalDnsRefused: [
      {
        at: '2026-11-26T10:00:00.000Z',
        dnsName: `www${hostile}.example.com`,
        recordType: 'A',
        code: 'NOT_DELEGATED',
        message: `no zone ${hostile}`,
      },
    ],
  });
  assert.match(out, /ExternalDNS endpoints not written/);
  assert.match(out, /NOT_DELEGATED/);
  assert.ok(!UNSAFE.test(out), JSON.stringify(out));
});

test('status prints 200,000 record sets (the column widths are not computed from a spread of every row)', () => {
  const items = Array.from({ length: 200_000 }, (_, i) =>
    recordSet('dns', `r${i}`, { zoneRef: { name: 'z' }, name: `h${i}`, type: 'A', records: ['192.0.2.1'] }),
  );
  const out = renderStatus({ items: items as Resource[] });
  // A row each in the table (and a line each under "Not ready").
  assert.equal(out.split('\n').filter((l) => /^dns +r\d+ /.test(l)).length, 200_000);
});
