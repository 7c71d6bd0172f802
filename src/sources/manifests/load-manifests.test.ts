import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prng } from '../../../test/support/prng.ts';
import {
  MAX_RESOLVED_CHARS,
  mayHaveAnchor,
  parseManifestText,
  RESOLVED_EXTRA,
  RESOLVED_PER_CHAR,
  resolvedBudget,
} from './load-manifests.ts';

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

describe('aliases (the precise parse)', () => {
  const recordSet = (annotations: string) =>
    'apiVersion: dns.zonekeeper.dev/v1alpha1\nkind: DNSRecordSet\n' +
    `metadata:\n  name: r\n  namespace: dns\n  annotations:\n${annotations}` +
    'spec: {zoneRef: {name: z}, name: www, type: A, records: ["192.0.2.1"]}\n';

  it('resolves anchors and aliases as written', () => {
    const read = parseManifestText(recordSet('    a: &v "one"\n    b: *v\n'), 'f.yaml');
    assert.deepEqual(read.fileErrors, []);
    const value = read.documents[0]!.value as { metadata: { annotations: Record<string, string> } };
    assert.deepEqual(value.metadata.annotations, { a: 'one', b: 'one' });
  });

  const aliased = (value: string, aliases: number) =>
    recordSet(
      `    a0: &v "${value}"\n${Array.from({ length: aliases }, (_, k) => `    a${k + 1}: *v\n`).join('')}`,
    );
  const refusal = (text: string) => {
    const budget = resolvedBudget(text.length);
    return `YAML: its aliases make the file's values more than ${budget} characters long (${RESOLVED_PER_CHAR} times the file's length and ${RESOLVED_EXTRA} more, at most ${MAX_RESOLVED_CHARS}); write the values out, or repeat fewer of them`;
  };

  it("refuses a document whose aliases make the values more than a few times the file's length", () => {
    // 100 aliases of a 200,000-character string: a 200 kB file of 20 M characters of values. Before,
    // 100 aliases of 5.5 MB were 550 M characters: the parse thread could not send them, and every
    // reload of the folder failed; and 130 files of 165 kB each, below any fixed limit a file, held
    // 2.8 GB and a 2 GB state log.
    const big = 'x'.repeat(200_000);
    const text = `${recordSet('    a: &w "small"\n    b: *w\n')}---\n${aliased(big, 99)}`;
    const read = parseManifestText(text, 'f.yaml');
    assert.equal(read.documents.length, 1, 'the first document is taken');
    assert.deepEqual(
      read.fileErrors.map((e) => [e.document, e.message]),
      [[2, refusal(text)]],
    );
    // Four times the string (the anchor and three aliases) is within the file's budget.
    assert.deepEqual(parseManifestText(aliased(big, 3), 'f.yaml').fileErrors, []);
  });

  it('counts the values over the whole file, at most MAX_RESOLVED_CHARS', () => {
    // Each document alone is within a budget of its own length (4 × 2.5 M = 10 M characters); the
    // two together are more than 16 Mi.
    const big = 'x'.repeat(2_500_000);
    assert.deepEqual(parseManifestText(aliased(big, 3), 'f.yaml').fileErrors, []);
    const text = `${aliased(big, 3)}---\n${aliased(big, 3)}`;
    assert.deepEqual(
      parseManifestText(text, 'f.yaml').fileErrors.map((e) => [e.document, e.message]),
      [[2, refusal(text)]],
    );
    assert.equal(resolvedBudget(text.length), MAX_RESOLVED_CHARS);
  });
});
