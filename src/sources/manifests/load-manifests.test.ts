import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prng } from '../../../test/support/prng.ts';
import { MAX_RESOLVED_CHARS, mayHaveAnchor, parseManifestText } from './load-manifests.ts';

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

  it('refuses a document whose aliases repeat more than MAX_RESOLVED_CHARS characters, and counts over the file', () => {
    // 100 aliases of a 200,000-character string: a 200 kB document of 20 M characters of values.
    // Before, 100 aliases of 5.5 MB were 550 M characters: the parse thread could not send them, and
    // every reload of the folder failed.
    const big = 'x'.repeat(200_000);
    const aliases = Array.from({ length: 99 }, (_, i) => `    a${i + 1}: *v\n`).join('');
    const bomb = recordSet(`    a0: &v "${big}"\n${aliases}`);
    const read = parseManifestText(`${recordSet('    a: &w "small"\n    b: *w\n')}---\n${bomb}`, 'f.yaml');
    assert.equal(read.documents.length, 1, 'the first document is taken');
    assert.deepEqual(
      read.fileErrors.map((e) => [e.document, e.message]),
      [
        [
          2,
          `YAML: its aliases make the file's values more than ${MAX_RESOLVED_CHARS} characters long; write the values out, or repeat fewer of them`,
        ],
      ],
    );
    // Within the budget (80 aliases: 16 M characters) the same document is taken.
    const fewer = Array.from({ length: 79 }, (_, i) => `    a${i + 1}: *v\n`).join('');
    assert.deepEqual(parseManifestText(recordSet(`    a0: &v "${big}"\n${fewer}`), 'f.yaml').fileErrors, []);
    // The budget is the file's: two documents of 80 aliases each are too many together.
    const twice = parseManifestText(
      `${recordSet(`    a0: &v "${big}"\n${fewer}`)}---\n${recordSet(`    a0: &v "${big}"\n${fewer}`)}`,
      'f.yaml',
    );
    assert.deepEqual(
      twice.fileErrors.map((e) => e.document),
      [2],
    );
  });
});
