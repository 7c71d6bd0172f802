import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UpdateRule } from '../api/dnszone.ts';
import { updateAllowed, updateKeyListed, updateNameMatches } from './update-policy.ts';

describe('update policy', () => {
  it('matches the delegation syntax', () => {
    assert.equal(updateNameMatches('@', '@'), true);
    assert.equal(updateNameMatches('www', 'www'), true);
    assert.equal(updateNameMatches('www', 'a.www'), false);
    assert.equal(updateNameMatches('*.dyn', 'a.dyn'), true);
    assert.equal(updateNameMatches('*.dyn', 'a.b.dyn'), true);
    assert.equal(updateNameMatches('*.dyn', 'dyn'), false);
    assert.equal(updateNameMatches('*', '@'), false);
    assert.equal(updateNameMatches('*', 'x'), true);
  });

  it('matches <label>.** as that leftmost label under any name, the apex included', () => {
    const p = '_acme-challenge.**';
    assert.equal(updateNameMatches(p, '_acme-challenge'), true);
    assert.equal(updateNameMatches(p, '_ACME-Challenge.www'), true);
    assert.equal(updateNameMatches(p, '_acme-challenge.a.b'), true);
    assert.equal(updateNameMatches(p, 'www'), false);
    assert.equal(updateNameMatches(p, 'x._acme-challenge'), false);
    assert.equal(updateNameMatches(p, '@'), false);
    // An escaped dot is part of one label, not a separator.
    assert.equal(updateNameMatches(p, '_acme-challenge\\.www'), false);
  });

  it('grants by key, name and type', () => {
    const rules: UpdateRule[] = [
      { key: 'acme-key', names: ['_acme-challenge.**'], types: ['TXT'] },
      { key: 'dyn-key.', names: ['*.dyn', 'host'], types: ['A', 'AAAA'] },
    ];
    const o = 'example.com.';
    assert.equal(updateAllowed(rules, o, 'acme-key.', '_acme-challenge.www.example.com.', 'TXT'), true);
    assert.equal(updateAllowed(rules, o, 'ACME-KEY', '_acme-challenge.example.com.', 'TXT'), true);
    assert.equal(updateAllowed(rules, o, 'acme-key.', '_acme-challenge.www.example.com.', 'A'), false);
    assert.equal(updateAllowed(rules, o, 'acme-key.', 'www.example.com.', 'TXT'), false);
    assert.equal(updateAllowed(rules, o, 'dyn-key', 'a.dyn.example.com.', 'A'), true);
    assert.equal(updateAllowed(rules, o, 'dyn-key', 'host.example.com.', 'AAAA'), true);
    assert.equal(updateAllowed(rules, o, 'dyn-key', '_acme-challenge.example.com.', 'TXT'), false);
    assert.equal(updateAllowed(rules, o, 'other', 'a.dyn.example.com.', 'A'), false);
    assert.equal(updateKeyListed(rules, 'dyn-key.'), true);
    assert.equal(updateKeyListed(rules, 'other.'), false);
  });
});
