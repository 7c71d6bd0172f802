import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prng } from '../../../test/support/prng.ts';
import { mayHaveAnchor } from './load-manifests.ts';

/** The pattern `mayHaveAnchor` stands for (what decided before it). */
const ANCHOR = /(^|[\s[{,:-])&[^\s]/m;

describe('mayHaveAnchor', () => {
  it('answers as the anchor pattern on seeded texts', () => {
    // Every kind of character the pattern tells apart: line breaks, other whitespace, indicators,
    // letters, a surrogate pair's halves.
    const alphabet = [
      '&',
      '&',
      ' ',
      '\n',
      '\r',
      '\t',
      '\u2028',
      '\u00a0',
      '\ufeff',
      '[',
      '{',
      ',',
      ':',
      '-',
      'a',
      '*',
      '"',
      '\ud83d',
      '\ude00',
    ];
    let yes = 0;
    for (let seed = 1; seed <= 20_000; seed++) {
      const rng = prng(seed);
      let text = '';
      for (let n = Math.floor(rng() * 12); n > 0; n--) text += alphabet[Math.floor(rng() * alphabet.length)];
      assert.equal(mayHaveAnchor(text), ANCHOR.test(text), JSON.stringify(text));
      if (ANCHOR.test(text)) yes++;
    }
    assert.ok(yes > 2000 && yes < 18_000, `${yes} texts with an anchor`);
  });

  it('on manifests', () => {
    for (const text of [
      'a: &x 1\nb: *x\n',
      '&x\n',
      '- &x [1]\n',
      'a: {b: &c d}\n',
      'a: "b&c"\n',
      'a: b &\n',
      'a: b&c\n',
      '&',
      '',
      'a:\n  - &anchor value\n',
    ])
      assert.equal(mayHaveAnchor(text), ANCHOR.test(text), JSON.stringify(text));
  });
});
