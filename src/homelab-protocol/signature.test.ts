import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordFqdn, recordPath } from './protocol.ts';
import {
  formatTimestamp,
  isFresh,
  parseTimestamp,
  sign,
  signatureMatches,
  signingString,
} from './signature.ts';

// Golden vectors computed outside Zonekeeper (Python's hmac module over the same strings), so a
// mistake shared by the signer and the verifier here cannot hide.
const SECRET = 'my-shared-secret-key';
const BODY =
  '{"record":{"type":"A","domain":"example.com","subdomain":"www","values":["192.168.1.100","192.168.1.101"],"ttl":600},"operation":"upsert"}';
const WITH_BODY = {
  method: 'POST',
  path: '/records',
  timestamp: '2025-12-30T10:00:00Z',
  nonce: '550e8400-e29b-41d4-a716-446655440000',
  body: BODY,
};
const WITHOUT_BODY = {
  method: 'DELETE',
  path: '/records/MX/example.com/@',
  timestamp: '2025-12-30T10:00:00Z',
  nonce: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
};
const HEALTH = {
  method: 'GET',
  path: '/health',
  timestamp: '2025-12-30T10:00:00Z',
  nonce: '550e8400-e29b-41d4-a716-446655440000',
};

test('the string signed joins method, path, timestamp, nonce and body with newlines', () => {
  assert.equal(
    signingString(WITH_BODY),
    `POST\n/records\n2025-12-30T10:00:00Z\n550e8400-e29b-41d4-a716-446655440000\n${BODY}`,
  );
});

test('without a body there is no fifth line and no trailing newline', () => {
  assert.equal(
    signingString(WITHOUT_BODY),
    'DELETE\n/records/MX/example.com/@\n2025-12-30T10:00:00Z\n7c9e6679-7425-40de-944b-e07fc1f90ae7',
  );
});

test('golden vectors: HMAC-SHA256, lowercase hex', () => {
  assert.equal(
    sign(SECRET, 'SHA256', WITH_BODY),
    '2e847b2da8eb810f23c595d131cf7bdac83eda1a87c433ff11ca8b1ce10b98ab',
  );
  assert.equal(
    sign(SECRET, 'SHA256', WITHOUT_BODY),
    '6afdb359fa62a9a41c0cba614cd2438a7c69e238de3168b278aabcf525c934c8',
  );
  assert.equal(
    sign(SECRET, 'SHA256', HEALTH),
    '0257949edf60d44251530f193766b341d9c6c8db186ba7c2cbe27a6846bff5d9',
  );
});

test('golden vectors: HMAC-SHA512, lowercase hex', () => {
  assert.equal(
    sign(SECRET, 'SHA512', WITH_BODY),
    '988f9a8bf48ae95f42f23b8e29174d94fa4b816a806840e9cac6fdff12421a4ad79b69e2e3595c932838286a15dd3f3a85d57ced5e08a3b40910ecf273519753',
  );
  assert.equal(
    sign(SECRET, 'SHA512', WITHOUT_BODY),
    'c48af3afed3bb9fcdd0cd20e98a89689701ba02e769f2c2b2539ebc495b6a3b0897a8fdac218755ef3399f5dd0eedbd1777ff83fbb87cd68ea87fb32596b999e',
  );
  assert.equal(
    sign(SECRET, 'SHA512', HEALTH),
    '13ab19924301ff9e7b5494a805d6b82afd174dfca1714cc99a12eee42069b696281de31b7ca92244f45a39409c4f3e76c1aa11ce8564e7dcb999c7764386fc17',
  );
});

test('an empty body is a body: it adds an empty fifth line', () => {
  assert.notEqual(sign(SECRET, 'SHA256', { ...HEALTH, body: '' }), sign(SECRET, 'SHA256', HEALTH));
});

test('verification accepts the signature in any case and refuses everything else', () => {
  const good = sign(SECRET, 'SHA256', WITH_BODY);
  assert.ok(signatureMatches(SECRET, 'SHA256', WITH_BODY, good));
  assert.ok(signatureMatches(SECRET, 'SHA256', WITH_BODY, good.toUpperCase()));
  assert.ok(!signatureMatches('other', 'SHA256', WITH_BODY, good));
  assert.ok(!signatureMatches(SECRET, 'SHA512', WITH_BODY, good));
  assert.ok(!signatureMatches(SECRET, 'SHA256', { ...WITH_BODY, body: `${BODY} ` }, good));
  assert.ok(!signatureMatches(SECRET, 'SHA256', { ...WITH_BODY, nonce: 'x' }, good));
  assert.ok(!signatureMatches(SECRET, 'SHA256', WITH_BODY, good.slice(2)));
  assert.ok(!signatureMatches(SECRET, 'SHA256', WITH_BODY, `zz${good.slice(2)}`));
  assert.ok(!signatureMatches(SECRET, 'SHA256', WITH_BODY, ''));
});

test('timestamps: RFC 3339 UTC with whole seconds, fresh within ±5 minutes', () => {
  assert.equal(formatTimestamp(new Date(Date.UTC(2025, 11, 30, 10, 0, 0, 789))), '2025-12-30T10:00:00Z');
  const now = Date.parse('2025-12-30T10:00:00Z');
  assert.ok(isFresh('2025-12-30T10:05:00Z', now));
  assert.ok(isFresh('2025-12-30T09:55:00Z', now));
  assert.ok(isFresh('2025-12-30T11:00:00+01:00', now));
  assert.ok(!isFresh('2025-12-30T10:05:01Z', now));
  assert.ok(!isFresh('2025-12-30T09:54:59Z', now));
  assert.equal(parseTimestamp('1767088800'), undefined);
  assert.equal(parseTimestamp('2025-12-30 10:00:00'), undefined);
});

test('record paths are not escaped; the apex FQDN is the domain', () => {
  assert.equal(recordPath('MX', 'example.com', '@'), '/records/MX/example.com/@');
  assert.equal(recordFqdn('example.com', '@'), 'example.com');
  assert.equal(recordFqdn('example.com', 'www'), 'www.example.com');
});
