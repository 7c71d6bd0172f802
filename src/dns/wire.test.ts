import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DnsError } from './errors.ts';
import { WireError, WireReader, WireWriter } from './wire.ts';

function bytes(...values: number[]): Uint8Array {
  return new Uint8Array(values);
}

function readName(buf: Uint8Array, offset: number): { name: string; end: number } {
  const r = new WireReader(buf, offset);
  const name = r.name();
  return { name, end: r.offset };
}

function throwsWire(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof WireError, `expected WireError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

describe('WireWriter', () => {
  test('integers and growth', () => {
    const w = new WireWriter(1);
    w.u8(0xab);
    w.u16(0x1234);
    w.u32(0xdeadbeef);
    w.bytes(bytes(1, 2, 3));
    for (let i = 0; i < 100; i++) w.u8(i);
    const out = w.finish();
    assert.equal(out.length, w.length);
    assert.deepEqual([...out.subarray(0, 10)], [0xab, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]);
    assert.equal(out[109], 99);
  });

  test('patchU16', () => {
    const w = new WireWriter();
    w.u16(0);
    w.u8(7);
    w.patchU16(0, 0xbeef);
    assert.deepEqual([...w.finish()], [0xbe, 0xef, 7]);
  });

  test('compression points at the longest known suffix, case-insensitively', () => {
    const w = new WireWriter();
    w.name('Example.COM.', true); // offset 0
    w.name('www.example.com.', true); // label www + pointer to 0
    w.name('mail.www.EXAMPLE.com.', true); // label mail + pointer to www (13)
    w.name('example.com.', true); // pointer only
    w.name('.', true);
    assert.deepEqual(
      [...w.finish()],
      [
        7, 0x45, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 3, 0x43, 0x4f, 0x4d, 0, 3, 0x77, 0x77, 0x77, 0xc0, 0, 4,
        0x6d, 0x61, 0x69, 0x6c, 0xc0, 13, 0xc0, 0, 0,
      ],
    );
  });

  test('uncompressed names are still recorded for later pointers', () => {
    const w = new WireWriter();
    w.name('a.example.', false);
    w.name('a.example.', false);
    w.name('b.a.example.', true);
    assert.deepEqual([...w.finish().subarray(22)], [1, 0x62, 0xc0, 0]);
  });

  test('escaped labels are encoded as octets', () => {
    const w = new WireWriter();
    w.name('a\\.b\\000\\\\.', false);
    assert.deepEqual([...w.finish()], [5, 0x61, 0x2e, 0x62, 0, 0x5c, 0]);
  });

  test('truncate forgets compression entries beyond the cut', () => {
    const w = new WireWriter();
    w.name('example.', true);
    const mark = w.length;
    w.name('www.example.', true);
    w.truncate(mark);
    assert.equal(w.length, mark);
    w.u16(0xffff); // overwrite where "www" was
    w.name('www.example.', true); // must not point at the discarded offset
    assert.deepEqual([...w.finish().subarray(mark)], [0xff, 0xff, 3, 0x77, 0x77, 0x77, 0xc0, 0]);
  });

  test('reset reuses the writer', () => {
    const w = new WireWriter();
    w.name('example.', true);
    w.reset();
    assert.equal(w.length, 0);
    w.name('example.', true);
    assert.equal(w.finish().length, 9);
  });

  test('no pointers to offsets above 0x3fff', () => {
    const w = new WireWriter();
    w.bytes(new Uint8Array(0x4000));
    w.name('late.example.', true);
    w.name('late.example.', true);
    assert.equal(w.length, 0x4000 + 14 * 2);
  });

  test('rejects non-canonical names', () => {
    assert.throws(() => new WireWriter().name('relative', true), DnsError);
    assert.throws(() => new WireWriter().name('a..b.', true), DnsError);
    assert.throws(() => new WireWriter().name(`${'a'.repeat(64)}.`, true), DnsError);
  });
});

describe('WireReader', () => {
  test('integers and bounds', () => {
    const r = new WireReader(bytes(1, 2, 3, 0xff, 0xff, 0xff, 0xff));
    assert.equal(r.u8(), 1);
    assert.equal(r.u16(), 0x0203);
    assert.equal(r.u32(), 0xffffffff);
    assert.equal(r.remaining, 0);
    throwsWire(() => r.u8(), 'TRUNCATED');
    throwsWire(() => new WireReader(bytes(1)).u16(), 'TRUNCATED');
    throwsWire(() => new WireReader(bytes(1, 2, 3)).u32(), 'TRUNCATED');
    throwsWire(() => new WireReader(bytes(1, 2, 3)).bytes(4), 'TRUNCATED');
  });

  test('decompresses names and advances past the first pointer', () => {
    const buf = bytes(
      3,
      0x63,
      0x6f,
      0x6d,
      0, // 0: com.
      7,
      0x65,
      0x78,
      0x61,
      0x6d,
      0x70,
      0x6c,
      0x65,
      0xc0,
      0, // 5: example + -> 0
      3,
      0x77,
      0x77,
      0x77,
      0xc0,
      5, // 15: www + -> 5
      0xc0,
      15, // 21: -> 15
    );
    assert.deepEqual(readName(buf, 0), { name: 'com.', end: 5 });
    assert.deepEqual(readName(buf, 5), { name: 'example.com.', end: 15 });
    assert.deepEqual(readName(buf, 15), { name: 'www.example.com.', end: 21 });
    assert.deepEqual(readName(buf, 21), { name: 'www.example.com.', end: 23 });
  });

  test('root and escaped octets', () => {
    assert.deepEqual(readName(bytes(0), 0), { name: '.', end: 1 });
    assert.equal(readName(bytes(4, 0x41, 0x2e, 0x20, 0xff, 0), 0).name, 'A\\.\\032\\255.');
  });

  test('pointer loops and forward pointers are BAD_POINTER', () => {
    throwsWire(() => readName(bytes(0xc0, 0), 0), 'BAD_POINTER'); // points to itself
    throwsWire(() => readName(bytes(0xc0, 2, 0), 0), 'BAD_POINTER'); // forward
    // 0: "a" then pointer back to 0 (inside the sequence it interrupts): a loop
    throwsWire(() => readName(bytes(1, 0x61, 0xc0, 0), 0), 'BAD_POINTER');
    // two sequences pointing at each other
    throwsWire(() => readName(bytes(1, 0x61, 0xc0, 4, 1, 0x62, 0xc0, 0), 4), 'BAD_POINTER');
  });

  test('truncated names', () => {
    throwsWire(() => readName(bytes(), 0), 'TRUNCATED');
    throwsWire(() => readName(bytes(3, 0x61, 0x62), 0), 'TRUNCATED');
    throwsWire(() => readName(bytes(1, 0x61), 0), 'TRUNCATED');
    throwsWire(() => readName(bytes(0, 0xc0), 1), 'TRUNCATED');
  });

  test('reserved label types are BAD_LABEL_TYPE', () => {
    throwsWire(() => readName(bytes(0x41, 0), 0), 'BAD_LABEL_TYPE');
    throwsWire(() => readName(bytes(0x80, 0), 0), 'BAD_LABEL_TYPE');
  });

  test('names over 255 octets are NAME_TOO_LONG, also via pointers', () => {
    const label = (c: number): number[] => [63, ...new Array<number>(63).fill(c)];
    const ok = bytes(
      ...label(0x61),
      ...label(0x62),
      ...label(0x63),
      61,
      ...new Array<number>(61).fill(0x64),
      0,
    );
    assert.equal(ok.length, 255);
    assert.equal(readName(ok, 0).end, 255);
    const long = bytes(
      ...label(0x61),
      ...label(0x62),
      ...label(0x63),
      62,
      ...new Array<number>(62).fill(0x64),
      0,
    );
    throwsWire(() => readName(long, 0), 'NAME_TOO_LONG');
    // 4 x 63-octet labels reached through a chain of pointers
    const chained: number[] = [0];
    const starts: number[] = [];
    for (let i = 0; i < 5; i++) {
      starts.push(chained.length);
      chained.push(...label(0x61 + i), 0xc0, i === 0 ? 0 : starts[i - 1]!);
    }
    throwsWire(() => readName(bytes(...chained), starts[4]!), 'NAME_TOO_LONG');
  });
});
