import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DnsError } from './errors.ts';
import { decodeEscapes, parseCharacterString, printCharacterString, tokenize } from './presentation.ts';

describe('tokenize', () => {
  test('splits on whitespace and keeps quoted strings whole', () => {
    assert.deepEqual(tokenize('  10\tmail.example.com.\n'), [
      { text: '10', quoted: false },
      { text: 'mail.example.com.', quoted: false },
    ]);
    assert.deepEqual(tokenize('"a b" "" c'), [
      { text: 'a b', quoted: true },
      { text: '', quoted: true },
      { text: 'c', quoted: false },
    ]);
  });

  test('keeps escapes in place', () => {
    assert.deepEqual(tokenize('"a\\"b" c\\ d'), [
      { text: 'a\\"b', quoted: true },
      { text: 'c\\ d', quoted: false },
    ]);
  });

  test('key="value" is one token', () => {
    assert.deepEqual(tokenize('alpn="h2,h3" port=443'), [
      { text: 'alpn=h2,h3', quoted: false },
      { text: 'port=443', quoted: false },
    ]);
  });

  test('errors', () => {
    assert.throws(
      () => tokenize('"abc'),
      (e: unknown) => e instanceof DnsError && e.code === 'UNTERMINATED_QUOTE',
    );
    assert.throws(
      () => tokenize('"a"b'),
      (e: unknown) => e instanceof DnsError && e.code === 'BAD_QUOTE',
    );
    assert.throws(
      () => tokenize('a"b"'),
      (e: unknown) => e instanceof DnsError && e.code === 'BAD_QUOTE',
    );
    assert.throws(
      () => tokenize('abc\\'),
      (e: unknown) => e instanceof DnsError && e.code === 'BAD_ESCAPE',
    );
  });
});

describe('character-strings', () => {
  test('decodeEscapes', () => {
    assert.equal(decodeEscapes('a\\"b\\\\c\\065\\255'), 'a"b\\cA\xff');
    assert.equal(decodeEscapes('é'), '\xc3\xa9'); // UTF-8 octets
    assert.equal(decodeEscapes('😀'), '\xf0\x9f\x98\x80');
    assert.throws(() => decodeEscapes('\\12'), DnsError);
    assert.throws(() => decodeEscapes('\\300'), DnsError);
  });

  test('255-octet limit', () => {
    assert.equal(parseCharacterString('a'.repeat(255)).length, 255);
    assert.throws(
      () => parseCharacterString('a'.repeat(256)),
      (e: unknown) =>
        e instanceof DnsError && e.code === 'CHARACTER_STRING_TOO_LONG' && e.message.includes('255'),
    );
  });

  test('print escapes quotes, backslashes and non-printables', () => {
    assert.equal(printCharacterString('a "b" \\ \x00\xff'), '"a \\"b\\" \\\\ \\000\\255"');
    const s = 'x"\\\x01 y\x7f';
    assert.equal(parseCharacterString(tokenize(printCharacterString(s))[0]!), s);
  });
});
