import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expiryState, parseRdapDomain, parseWhois, rdapBaseUrls, whoisReferral } from './registration.ts';

describe('registration data parsing', () => {
  test('RFC 9224: the longest matching entry, HTTPS first', () => {
    const bootstrap = {
      services: [
        [
          ['com', 'net'],
          ['http://rdap.a.test/', 'https://rdap.a.test/'],
        ],
        [['co.uk'], ['https://rdap.b.test/']],
        [['uk'], ['https://rdap.c.test/']],
      ],
    };
    assert.deepEqual(rdapBaseUrls(bootstrap, 'example.com'), ['https://rdap.a.test/', 'http://rdap.a.test/']);
    assert.deepEqual(rdapBaseUrls(bootstrap, 'shop.example.co.uk'), ['https://rdap.b.test/']);
    assert.deepEqual(rdapBaseUrls(bootstrap, 'example.org.uk'), ['https://rdap.c.test/']);
    assert.deepEqual(rdapBaseUrls(bootstrap, 'example.org'), []);
    assert.deepEqual(rdapBaseUrls({ nonsense: true }, 'example.com'), []);
  });

  test('RDAP: only a domain object is read', () => {
    assert.throws(() => parseRdapDomain({ objectClassName: 'entity' }, 'https://x/'), /not a domain object/);
    const r = parseRdapDomain(
      {
        objectClassName: 'domain',
        events: [{ eventAction: 'expiration', eventDate: '2030-01-01T00:00:00Z' }],
      },
      'https://rdap.x.test/',
    );
    assert.deepEqual(r, {
      source: 'RDAP',
      server: 'https://rdap.x.test/',
      registry: 'rdap.x.test',
      expires: '2030-01-01T00:00:00Z',
    });
  });

  test('WHOIS: referral and registry answers; an answer without data is an error', () => {
    assert.equal(
      whoisReferral('domain: COM\nrefer:        whois.verisign-grs.com\n'),
      'whois.verisign-grs.com',
    );
    assert.equal(whoisReferral('% no such domain\n'), undefined);
    assert.throws(
      () => parseWhois('No match for "EXAMPLE.TEST".\r\n', 'whois.x.test'),
      /holds no registration data/,
    );
    const r = parseWhois(
      'Registrar: R\r\nRegistry Expiry Date: 2030-01-01T00:00:00Z\r\nDNSSEC: signedDelegation\r\n',
      'whois.x.test',
    );
    assert.equal(r.dnssecSigned, true);
    assert.equal(r.registrar, 'R');
  });

  test('expiry: unknown, fine, expiring within the window, expired', () => {
    const now = Date.parse('2026-11-26T00:00:00Z');
    const day = 86_400_000;
    assert.equal(expiryState(undefined, now, 30 * day).state, 'unknown');
    assert.equal(
      expiryState({ source: 'RDAP', server: 's', expires: 'soon' }, now, 30 * day).state,
      'unknown',
    );
    assert.equal(
      expiryState({ source: 'RDAP', server: 's', expires: '2027-06-01T00:00:00Z' }, now, 30 * day).state,
      'ok',
    );
    const soon = expiryState(
      { source: 'RDAP', server: 's', expires: '2026-12-06T00:00:00Z', registrar: 'R' },
      now,
      30 * day,
    );
    assert.equal(soon.state, 'expiring');
    assert.match(soon.message, /in 10 days\); renew it with R/);
    assert.equal(
      expiryState({ source: 'RDAP', server: 's', expires: '2026-11-01T00:00:00Z' }, now, 30 * day).state,
      'expired',
    );
  });
});
