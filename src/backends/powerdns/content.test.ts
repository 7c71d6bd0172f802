import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import { powerDnsContent, sameRecords } from './content.ts';

const origin = 'example.com.';
const content = (type: RecordTypeName, text: string) => powerDnsContent(parseRdata(type, text, origin));

describe('powerDnsContent', () => {
  test('SVCB/HTTPS in the form PowerDNS 4.7 stores (it refuses any other spelling)', () => {
    // Each expected string is what pdns_server 4.7.3 answered "parsed as" or read back.
    assert.equal(
      content('HTTPS', '1 . alpn="h3,h2" ipv4hint=192.0.2.10 ipv6hint=2001:db8::10'),
      '1 . alpn=h3,h2 ipv4hint=192.0.2.10 ipv6hint=2001:db8::10',
    );
    assert.equal(
      content('SVCB', '1 www alpn=h2 port=8443 dohpath=/dns-query{?dns}'),
      '1 www.example.com. alpn=h2 port=8443 key7="/dns-query{?dns}"',
    );
    assert.equal(
      content(
        'SVCB',
        '1 www.example.com. mandatory=alpn,port alpn=h2,h3 no-default-alpn port=8443 ech=AEP+DQA= ipv6hint=2001:db8::1',
      ),
      '1 www.example.com. mandatory=alpn,port alpn=h2,h3 no-default-alpn port=8443 ech="AEP+DQA=" ipv6hint=2001:db8::1',
    );
    assert.equal(content('SVCB', '0 www.example.com.'), '0 www.example.com.');
    assert.equal(content('SVCB', '1 . key65000=abc'), '1 . key65000="abc"');
    assert.equal(content('HTTPS', '1 . alpn=h2\\\\,x'), '1 . alpn=h2\\,x');
  });

  test('every other type is our canonical presentation, which PowerDNS accepts as is', () => {
    for (const [type, text] of [
      ['A', '192.0.2.1'],
      ['AAAA', '2001:db8::1'],
      ['CNAME', 'www'],
      ['ALIAS', 'www.example.net.'],
      ['MX', '10 mail'],
      ['TXT', '"v=spf1 -all" "second"'],
      ['CAA', '0 issue "letsencrypt.org"'],
      ['NAPTR', '100 10 "S" "SIP+D2T" "" _sip._tcp'],
      ['DS', '60485 13 2 D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A'],
    ] as const) {
      const rdata = parseRdata(type, text, origin);
      assert.equal(powerDnsContent(rdata), printRdata(rdata), type);
    }
    assert.equal(content('CNAME', 'www'), 'www.example.com.');
    assert.equal(content('TXT', 'hello'), '"hello"');
  });
});

describe('sameRecords', () => {
  const rdata = ['10 mail', '20 mx2.example.net.'].map((t) => parseRdata('MX', t, origin));
  const ours = rdata.map(powerDnsContent);

  test('same text in any order', () => {
    assert.ok(sameRecords('MX', [ours[1]!, ours[0]!], rdata, ours, origin));
  });

  test('same meaning in another spelling (case of names)', () => {
    assert.ok(sameRecords('MX', ['10 MAIL.example.COM.', '20 mx2.example.net.'], rdata, ours, origin));
  });

  test('different records, counts, or content our parser refuses', () => {
    assert.ok(!sameRecords('MX', ['10 mail.example.com.'], rdata, ours, origin));
    assert.ok(!sameRecords('MX', ['10 mail.example.com.', '30 mx2.example.net.'], rdata, ours, origin));
    assert.ok(!sameRecords('MX', ['10 mail.example.com.', 'nonsense'], rdata, ours, origin));
    assert.ok(!sameRecords('MX', ['10 mail.example.com.', '10 mail.example.com.'], rdata, ours, origin));
  });
});
