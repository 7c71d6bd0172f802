import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { publicSuffixSection } from './public-suffix.ts';

describe('publicSuffixSection', () => {
  test('names that are public suffixes, and in which section of the list', () => {
    assert.equal(publicSuffixSection('co.uk.'), 'ICANN');
    assert.equal(publicSuffixSection('CO.UK.'), 'ICANN', 'case does not matter');
    assert.equal(publicSuffixSection('com.'), 'ICANN');
    assert.equal(publicSuffixSection('in-addr.arpa.'), 'ICANN');
    assert.equal(publicSuffixSection('github.io.'), 'private');
    assert.equal(publicSuffixSection('x.compute.amazonaws.com.'), 'private', 'wildcard rules (*.compute...)');
    assert.equal(publicSuffixSection('foo.ck.'), 'ICANN', '*.ck');
  });

  test('names below a public suffix, exceptions and unlisted names are not', () => {
    for (const name of [
      'shop.co.uk.',
      'example.com.',
      'x.github.io.',
      'www.ck.', // !www.ck
      '2.0.192.in-addr.arpa.',
      '_acme-challenge.example.com.',
      'zonekeeper.test.',
      'example.invalid.',
      '.',
    ]) {
      assert.equal(publicSuffixSection(name), undefined, name);
    }
  });
});
