import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../../test/support/prng.ts';
import { DnsError } from './errors.ts';
import {
  asciiLower,
  canonicalSortKey,
  compareCanonical,
  compareNameKeys,
  encodeNameUncompressed,
  isHostname,
  isInDomain,
  isWildcardName,
  labelCount,
  nameEquals,
  nameFromLabels,
  nameKey,
  nameLabels,
  nameWireLength,
  parentName,
  parseName,
  relativeLabelKeys,
  relativeName,
} from './name.ts';

function throwsCode(fn: () => unknown, code: string, messageIncludes?: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof DnsError, `expected DnsError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (messageIncludes !== undefined) assert.ok(e.message.includes(messageIncludes), e.message);
    return true;
  });
}

describe('parseName', () => {
  test('absolute, relative and @', () => {
    assert.equal(parseName('www.example.com.'), 'www.example.com.');
    assert.equal(parseName('www', 'example.com.'), 'www.example.com.');
    assert.equal(parseName('a.b', 'example.com.'), 'a.b.example.com.');
    assert.equal(parseName('@', 'example.com.'), 'example.com.');
    assert.equal(parseName('www.other.org.', 'example.com.'), 'www.other.org.');
    assert.equal(parseName('.'), '.');
    assert.equal(parseName('com', '.'), 'com.');
  });

  test('case is preserved', () => {
    assert.equal(parseName('WWW.Example.COM.'), 'WWW.Example.COM.');
  });

  test('relative name without origin is rejected', () => {
    throwsCode(() => parseName('www'), 'RELATIVE_NAME_WITHOUT_ORIGIN', 'trailing dot');
    throwsCode(() => parseName('@'), 'RELATIVE_NAME_WITHOUT_ORIGIN');
  });

  test('origin must be absolute', () => {
    throwsCode(() => parseName('www', 'example.com'), 'BAD_ORIGIN');
  });

  test('escapes are normalised canonically', () => {
    assert.equal(parseName('\\065bc.example.'), 'Abc.example.');
    assert.equal(parseName('a\\.b.example.'), 'a\\.b.example.');
    assert.equal(parseName('a\\046b.example.'), 'a\\.b.example.');
    assert.equal(parseName('a\\\\b.example.'), 'a\\\\b.example.');
    assert.equal(parseName('a\\092b.example.'), 'a\\\\b.example.');
    assert.equal(parseName('\\000\\255\\032.example.'), '\\000\\255\\032.example.');
    assert.equal(parseName('a\\ b.example.'), 'a\\032b.example.');
    assert.equal(parseName('a"b.example.'), 'a\\"b.example.');
    assert.equal(parseName('\\@\\$\\(\\);.example.'), '\\@\\$\\(\\)\\;.example.');
    assert.equal(parseName('\\x.example.'), 'x.example.');
  });

  test('escape round trip through wire form', () => {
    const name = parseName('a\\.b\\000\\\\c\\"d.example.');
    const wire = encodeNameUncompressed(name);
    assert.deepEqual([...wire.subarray(0, 9)], [8, 0x61, 0x2e, 0x62, 0, 0x5c, 0x63, 0x22, 0x64]);
    assert.equal(parseName(name), name);
  });

  test('bad escapes', () => {
    throwsCode(() => parseName('a\\'), 'BAD_ESCAPE');
    throwsCode(() => parseName('a\\25.'), 'BAD_ESCAPE', 'three digits');
    throwsCode(() => parseName('a\\256.'), 'BAD_ESCAPE', 'above 255');
  });

  test('empty labels', () => {
    throwsCode(() => parseName('a..b.'), 'EMPTY_LABEL');
    throwsCode(() => parseName('.a.'), 'EMPTY_LABEL');
    throwsCode(() => parseName('..'), 'EMPTY_LABEL');
    throwsCode(() => parseName(''), 'EMPTY_NAME');
  });

  test('spaces and non-ASCII are rejected with a fix', () => {
    throwsCode(() => parseName('mail example.com.'), 'BAD_NAME_CHARACTER', '\\032');
    throwsCode(() => parseName('bücher.example.'), 'NON_ASCII_NAME', 'xn--');
  });

  test('label length boundary: 63 ok, 64 fails', () => {
    const l63 = 'a'.repeat(63);
    assert.equal(parseName(`${l63}.example.`), `${l63}.example.`);
    throwsCode(() => parseName(`${'a'.repeat(64)}.example.`), 'LABEL_TOO_LONG', '63');
    // escapes count as one octet
    assert.equal(labelCount(parseName(`${'\\065'.repeat(63)}.`)), 1);
    throwsCode(() => parseName(`${'\\065'.repeat(64)}.`), 'LABEL_TOO_LONG');
  });

  test('name length boundary: 255 octets ok, 256 fails', () => {
    // 3 labels of 63 + 1 label of 61 = 4*64 - 2 + 1 (root) = 255
    const ok = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}.`;
    assert.equal(nameWireLength(parseName(ok)), 255);
    const tooLong = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}.`;
    throwsCode(() => parseName(tooLong), 'NAME_TOO_LONG', '256 octets');
    // the limit also applies after appending the origin
    throwsCode(
      () => parseName('d'.repeat(62), `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.`),
      'NAME_TOO_LONG',
    );
  });
});

describe('parseName of names already in canonical form', () => {
  /**
   * The same name with its first octet written as a decimal escape: parsed character by character,
   * so the reference for a name that the plain path takes as it is.
   */
  function escapedFirst(text: string): string {
    return `\\${String(text.charCodeAt(0)).padStart(3, '0')}${text.slice(1)}`;
  }

  function outcome(fn: () => string): string {
    try {
      return `name ${fn()}`;
    } catch (e) {
      return e instanceof DnsError ? `error ${e.code}` : `thrown ${String(e)}`;
    }
  }

  test('give the name the character loop gives, or its error, for listed and 5,000 random names', () => {
    const origins = [undefined, '.', 'example.com.', 'Example.COM.', 'a\\.b.example.', 'relative', ''];
    const l63 = 'a'.repeat(63);
    const listed = [
      'www',
      'www.',
      'WWW.Example.com.',
      '*.apps',
      '_sip._tcp.s5',
      'a-b.c_d.e',
      '..',
      'a..b',
      '.a',
      'a.',
      l63,
      `${l63}a`,
      `${l63}.${l63}.${l63}.${'d'.repeat(61)}.`,
      `${l63}.${l63}.${l63}.${'d'.repeat(62)}.`,
      `${l63}.${l63}.${l63}.${'d'.repeat(60)}`,
      `${l63}.${l63}.${l63}.${'d'.repeat(61)}`,
      `${l63}.${l63}.${'d'.repeat(50)}`,
      'a!#%&*+,-/:<=>?[]^`{|}~z',
    ];
    const random = prng(1327);
    const alphabet = 'abcXYZ019-_*!~.';
    for (let n = 0; n < 5000; n++) {
      const length = 1 + Math.floor(random() * (random() < 0.1 ? 260 : 20));
      let text = '';
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
      listed.push(text);
    }
    for (const text of listed) {
      if (text.startsWith('.')) continue; // the escape would not stand for the same first label
      for (const origin of origins) {
        assert.equal(
          outcome(() => parseName(text, origin)),
          outcome(() => parseName(escapedFirst(text), origin)),
          `${JSON.stringify(text)} in ${JSON.stringify(origin)}`,
        );
      }
    }
  });

  test('an absolute name is the text given; a relative one ends in its origin', () => {
    assert.equal(parseName('Www.Example.com.'), 'Www.Example.com.');
    assert.equal(parseName('www', '.'), 'www.');
    assert.equal(parseName('a.b', 'example.com.'), 'a.b.example.com.');
    throwsCode(() => parseName('a..b', 'example.com.'), 'EMPTY_LABEL');
    throwsCode(() => parseName('www', 'example.com'), 'BAD_ORIGIN');
  });
});

describe('asciiLower', () => {
  /** The character loop it replaced, as the reference. */
  function reference(s: string): string {
    let upper = false;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7e) return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
      if (c >= 0x41 && c <= 0x5a) upper = true;
    }
    return upper ? s.toLowerCase() : s;
  }

  test('folds A-Z only, as the character loop did, over listed and 20,000 random strings', () => {
    const listed = [
      '',
      'a',
      'Z',
      '@[`{',
      'WWW.Example.COM.',
      '\x7f',
      'ÀB',
      'Éé.AB',
      'İI',
      'ΣA',
      'ſK',
      '\u212aK',
      '😀Ab',
    ];
    const random = prng(4343);
    // ASCII around the letters, DEL, Latin-1 and beyond (letters with case of their own), surrogates.
    const alphabet = [
      'a',
      'z',
      'A',
      'Z',
      '@',
      '[',
      '`',
      '{',
      '.',
      '-',
      '\\',
      '0',
      '\x7e',
      '\x7f',
      'À',
      'é',
      'İ',
      'Σ',
      'ſ',
      '\u212a',
      '\ud83d',
      '\ude00',
    ];
    const strings = [...listed];
    for (let i = 0; i < 20_000; i++) {
      let s = '';
      const n = Math.floor(random() * 12);
      for (let k = 0; k < n; k++) s += alphabet[Math.floor(random() * alphabet.length)];
      strings.push(s);
    }
    for (const s of strings) assert.equal(asciiLower(s), reference(s), JSON.stringify(s));
    const lower = 'www.example.com.';
    assert.equal(asciiLower(lower), lower, 'a string without A-Z is itself');
  });
});

describe('name utilities', () => {
  test('nameKey and nameEquals are ASCII case-insensitive', () => {
    assert.equal(nameKey('WWW.Example.COM.'), 'www.example.com.');
    assert.ok(nameEquals('WWW.example.com.', 'www.EXAMPLE.com.'));
    assert.ok(!nameEquals('www.example.com.', 'ww.example.com.'));
    assert.ok(nameEquals('\\065.example.', 'a.example.'));
    // \200 and \232 are distinct octets: no non-ASCII case folding (RFC 4343)
    assert.ok(!nameEquals('\\200.example.', '\\232.example.'));
    assert.equal(nameKey('\\200X.'), '\\200x.');
  });

  test('isInDomain is label-boundary and escape aware', () => {
    assert.ok(isInDomain('example.com.', 'example.com.'));
    assert.ok(isInDomain('www.Example.COM.', 'example.com.'));
    assert.ok(isInDomain('a.b.example.com.', 'example.com.'));
    assert.ok(!isInDomain('example.com.', 'ample.com.'));
    assert.ok(!isInDomain('com.', 'example.com.'));
    assert.ok(!isInDomain('x\\.example.com.', 'example.com.'));
    assert.ok(isInDomain('x\\\\.example.com.', 'example.com.'));
    assert.ok(isInDomain('anything.', '.'));
    assert.ok(isInDomain('.', '.'));
    assert.ok(!isInDomain('.', 'com.'));
  });

  test('labels', () => {
    assert.deepEqual(nameLabels('www.example.com.'), ['www', 'example', 'com']);
    assert.deepEqual(nameLabels('.'), []);
    assert.deepEqual(nameLabels('a\\.b.c.'), ['a\\.b', 'c']);
    assert.equal(nameFromLabels(['a\\.b', 'c']), 'a\\.b.c.');
    assert.equal(nameFromLabels([]), '.');
    assert.throws(() => nameFromLabels(['a.b']), DnsError);
    assert.equal(labelCount('.'), 0);
    assert.equal(labelCount('a\\.b.c.'), 2);
  });

  test('relativeLabelKeys: parsed labels, lowercased, escaped dots inside labels', () => {
    assert.deepEqual(relativeLabelKeys('@'), []);
    assert.deepEqual(relativeLabelKeys('Web.APPS'), ['web', 'apps']);
    assert.deepEqual(relativeLabelKeys('evil\\.apps'), ['evil\\.apps']);
    assert.deepEqual(
      relativeLabelKeys('www\\046apps'),
      ['www\\.apps'],
      '\\046 is a dot octet inside the label',
    );
    assert.deepEqual(relativeLabelKeys('\\065pi'), ['api']);
    assert.deepEqual(
      relativeLabelKeys('a\\\\.b'),
      ['a\\\\', 'b'],
      'an escaped backslash ends before the separator',
    );
    assert.deepEqual(relativeLabelKeys('*.apps'), ['*', 'apps']);
    assert.throws(() => relativeLabelKeys('a..b'), DnsError);
  });

  test('parentName', () => {
    assert.equal(parentName('www.example.com.'), 'example.com.');
    assert.equal(parentName('com.'), '.');
    assert.equal(parentName('a\\.b.c.'), 'c.');
    assert.throws(() => parentName('.'), DnsError);
  });

  test('wildcards', () => {
    assert.ok(isWildcardName('*.example.com.'));
    assert.ok(isWildcardName('*.'));
    assert.ok(!isWildcardName('a.*.example.com.'));
    assert.ok(!isWildcardName('*a.example.com.'));
    assert.ok(!isWildcardName('example.com.'));
  });

  test('relativeName', () => {
    assert.equal(relativeName('example.com.', 'example.com.'), '@');
    assert.equal(relativeName('www.example.com.', 'example.com.'), 'www');
    assert.equal(relativeName('a.b.Example.com.', 'example.COM.'), 'a.b');
    assert.equal(relativeName('www.other.org.', 'example.com.'), 'www.other.org.');
    assert.equal(relativeName('example.com.', 'ample.com.'), 'example.com.');
  });

  test('RFC 4034 §6.1 canonical order example', () => {
    const ordered = [
      'example.',
      'a.example.',
      'yljkjljk.a.example.',
      'Z.a.example.',
      'zABC.a.EXAMPLE.',
      'z.example.',
      '\\001.z.example.',
      '*.z.example.',
      '\\200.z.example.',
    ];
    const shuffled = [...ordered].reverse();
    shuffled.sort(compareCanonical);
    assert.deepEqual(shuffled, ordered);
    assert.equal(compareCanonical('A.example.', 'a.EXAMPLE.'), 0);
    assert.ok(compareCanonical('.', 'com.') < 0);
  });

  test('wire length and encoding', () => {
    assert.equal(nameWireLength('.'), 1);
    assert.equal(nameWireLength('www.example.com.'), 17);
    assert.equal(nameWireLength('\\000a.'), 4);
    assert.deepEqual([...encodeNameUncompressed('.')], [0]);
    assert.deepEqual([...encodeNameUncompressed('Ab.c.')], [2, 0x41, 0x62, 1, 0x63, 0]);
  });

  test('isHostname', () => {
    assert.ok(isHostname('mail.example.com.'));
    assert.ok(isHostname('1mail.example.com.'));
    assert.ok(isHostname('*.example.com.'));
    assert.ok(isHostname('.'));
    assert.ok(!isHostname('a.*.example.com.'));
    assert.ok(!isHostname('_sip._tcp.example.com.'));
    assert.ok(!isHostname('-a.example.com.'));
    assert.ok(!isHostname('a-.example.com.'));
    assert.ok(!isHostname('a\\.b.example.com.'));
    assert.ok(isHostname('a-b.example.com.'));
  });
});

describe('canonicalSortKey', () => {
  test('orders exactly like compareCanonical, and subtrees are key prefixes', async () => {
    const { canonicalSortKey, compareCanonical } = await import('./name.ts');
    const names = [
      'example.',
      'a.example.',
      'yljkjljk.a.example.',
      'Z.a.example.',
      'zABC.a.EXAMPLE.',
      'z.example.',
      '\\001.z.example.',
      '*.z.example.',
      '\\200.z.example.',
      'ab.example.',
      'a\\000.example.',
      '.',
    ];
    const byCompare = [...names].sort(compareCanonical);
    const byKey = [...names].sort((a, b) =>
      canonicalSortKey(a) < canonicalSortKey(b) ? -1 : canonicalSortKey(a) > canonicalSortKey(b) ? 1 : 0,
    );
    assert.deepEqual(byKey, byCompare);
    const parent = canonicalSortKey('a.example.');
    assert.ok(canonicalSortKey('x.y.a.example.').startsWith(`${parent}\u0000`));
    assert.ok(!canonicalSortKey('ab.example.').startsWith(`${parent}\u0000`));
    assert.equal(canonicalSortKey('.'), '');
  });
});

describe('compareNameKeys', () => {
  test('names without a final dot (relative) order by their labels too', () => {
    assert.ok(compareNameKeys('a', 'b') < 0);
    assert.ok(compareNameKeys('www', 'mail') > 0);
    assert.ok(compareNameKeys('a', 'x.a') < 0);
    assert.ok(compareNameKeys('b.a', 'a.b') < 0);
  });

  const pick = <T>(r: () => number, list: readonly T[]): T => list[Math.floor(r() * list.length)]!;

  test('compareNameKeys orders name keys as their canonical sort keys do (RFC 4034 §6.1), escapes included', () => {
    const names = [
      '.',
      'com.',
      'example.com.',
      'a.example.com.',
      'z.example.com.',
      'yljkjljk.a.example.com.',
      'z.a.example.com.',
      'zabc.a.example.com.',
      '*.z.example.com.',
      'a-.example.com.',
      'a0.example.com.',
      'ab.example.com.',
      'a.b.example.com.',
      'a\\.b.example.com.',
      'a\\000.example.com.',
      '\\000.example.com.',
      '\\255.example.com.',
      'b\\.example.com.',
      'example.net.',
      'www.example.net.',
    ].map((n) => nameKey(parseName(n)));
    const r = prng(7);
    for (let round = 0; round < 20; round++) {
      const shuffled = [...names].sort(() => r() - 0.5);
      const bySortKey = [...shuffled].sort((a, b) => {
        const x = canonicalSortKey(a);
        const y = canonicalSortKey(b);
        return x < y ? -1 : x > y ? 1 : 0;
      });
      assert.deepEqual([...shuffled].sort(compareNameKeys), bySortKey);
    }
    // Random names over a small alphabet, so that labels share prefixes and suffixes.
    const label = () => {
      let l = '';
      const n = 1 + Math.floor(r() * 4);
      for (let i = 0; i < n; i++) l += pick(r, ['a', 'b', 'z', '-', '0', '\\.', '\\000']);
      return l;
    };
    const random: string[] = [];
    for (let i = 0; i < 400; i++) {
      const labels: string[] = [];
      for (let n = Math.floor(r() * 4); n > 0; n--) labels.push(label());
      random.push(
        nameKey(
          parseName(
            `${labels.join('.')}${labels.length ? '.' : ''}${pick(r, ['example.com.', 'a.com.', 'com.', ''])}` ||
              '.',
          ),
        ),
      );
    }
    const sortKeyOrder = (a: string, b: string) => {
      const x = canonicalSortKey(a);
      const y = canonicalSortKey(b);
      return x < y ? -1 : x > y ? 1 : 0;
    };
    for (const a of random.slice(0, 150))
      for (const b of random)
        assert.equal(Math.sign(compareNameKeys(a, b)), Math.sign(sortKeyOrder(a, b)) || 0, `${a} ${b}`);
    for (const a of names)
      for (const b of names)
        assert.equal(Math.sign(compareNameKeys(a, b)) + Math.sign(compareNameKeys(b, a)), 0);
  });
});
