import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackendError } from '../backend.ts';
import { errorDetail, httpError, PowerDnsError, recordFromError, transportError } from './errors.ts';

const context = { url: 'http://127.0.0.1:8081', serverId: 'localhost' };

describe('httpError', () => {
  const cases: [number, string, string, 'BackendUnreachable' | 'BackendRejected', RegExp][] = [
    [
      401,
      'Unauthorized',
      'PDNS_UNAUTHORIZED',
      'BackendRejected',
      /refused the API key \(401 Unauthorized\).*apiKeySecretRef/,
    ],
    [403, '', 'PDNS_UNAUTHORIZED', 'BackendRejected', /webserver-allow-from/],
    [404, 'Not Found', 'PDNS_SERVER_NOT_FOUND', 'BackendRejected', /check serverId \("localhost"/],
    [
      422,
      '{"error": "RRset www.example.org. IN A: Name is out of zone"}',
      'PDNS_UNPROCESSABLE',
      'BackendRejected',
      /rejected PATCH zone example\.com\.: RRset www\.example\.org\. IN A: Name is out of zone$/,
    ],
    [400, 'Bad Request', 'PDNS_BAD_REQUEST', 'BackendRejected', /webserver-max-bodysize/],
    [
      500,
      '{"error": "database is locked"}',
      'PDNS_SERVER_ERROR',
      'BackendUnreachable',
      /database is locked.*PowerDNS log/,
    ],
    [418, 'teapot', 'PDNS_HTTP', 'BackendRejected', /answered PATCH zone example\.com\. with 418 teapot/],
  ];
  for (const [status, body, code, reason, message] of cases) {
    test(`${status} → ${code} (${reason})`, () => {
      const e = httpError('PATCH zone example.com.', status, body, { ...context, requestBytes: 3_000_000 });
      assert.ok(e instanceof PowerDnsError);
      assert.ok(e instanceof BackendError, 'the controller reads .reason');
      assert.equal(e.code, code);
      assert.equal(e.reason, reason);
      assert.equal(e.status, status);
      assert.match(e.message, message);
      assert.match(e.message, /PowerDNS at http:\/\/127\.0\.0\.1:8081/);
    });
  }
});

describe('transportError', () => {
  const ctx = { url: 'https://pdns.example:8443', timeoutMs: 10_000 };
  const errno = (code: string, message = code) => Object.assign(new Error(message), { code });

  test('connection refused → PDNS_UNREACHABLE, says where and what to check', () => {
    const e = transportError('GET zone example.com.', errno('ECONNREFUSED'), ctx);
    assert.equal(e.code, 'PDNS_UNREACHABLE');
    assert.equal(e.reason, 'BackendUnreachable');
    assert.match(
      e.message,
      /cannot reach PowerDNS at https:\/\/pdns\.example:8443 for GET zone example\.com\. \(ECONNREFUSED\)/,
    );
    assert.match(e.message, /api=yes and webserver=yes/);
  });

  test('time limit → PDNS_TIMEOUT with the limit', () => {
    const e = transportError('PATCH zone example.com.', errno('PDNS_TIMEOUT'), ctx);
    assert.equal(e.code, 'PDNS_TIMEOUT');
    assert.equal(e.reason, 'BackendUnreachable');
    assert.match(e.message, /within 10 s.*timeoutSeconds/);
  });

  test('certificate problems → PDNS_TLS, pointing at tls.caFile', () => {
    for (const code of [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ]) {
      const e = transportError('GET server', errno(code), ctx);
      assert.equal(e.code, 'PDNS_TLS', code);
      assert.match(e.message, /tls\.caFile/);
    }
  });

  test('a PowerDnsError passes through', () => {
    const inner = new PowerDnsError('PDNS_TLS', 'cannot read tls.caFile');
    assert.equal(transportError('x', inner, ctx), inner);
  });
});

describe('errorDetail and recordFromError', () => {
  test('the error field of PowerDNS JSON, else the text', () => {
    assert.equal(errorDetail('{"error": "Duplicate RRset"}'), 'Duplicate RRset');
    assert.equal(errorDetail('Not Found'), 'Not Found');
  });

  test('a refused record: owner, type, content and what PowerDNS would store', () => {
    assert.deepEqual(
      recordFromError(
        `Record t.example.com./SVCB '1 www.example.com. port=8443 alpn=h2': Not in expected format (parsed as '1 www.example.com. alpn=h2 port=8443')`,
      ),
      {
        owner: 't.example.com.',
        type: 'SVCB',
        content: '1 www.example.com. port=8443 alpn=h2',
        parsedAs: '1 www.example.com. alpn=h2 port=8443',
        reason: `Not in expected format (parsed as '1 www.example.com. alpn=h2 port=8443')`,
      },
    );
    assert.deepEqual(
      recordFromError(
        `Record www3.example.com./A '1.2.3.400': Parsing record content (try 'pdnsutil check-zone'): unable to parse IP address`,
      ),
      {
        owner: 'www3.example.com.',
        type: 'A',
        content: '1.2.3.400',
        reason: `Parsing record content (try 'pdnsutil check-zone'): unable to parse IP address`,
      },
    );
    assert.deepEqual(recordFromError('RRset www2.example.com. IN CNAME: Conflicts with pre-existing RRset'), {
      owner: 'www2.example.com.',
      type: 'CNAME',
      reason: 'Conflicts with pre-existing RRset',
    });
    assert.equal(
      recordFromError('Duplicate RRset www3.example.com. IN A with changetype: REPLACE'),
      undefined,
    );
  });
});
