import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LineSplitter } from './watch-lines.ts';

function split(chunks: string[]): string[] {
  const splitter = new LineSplitter();
  const lines = chunks.flatMap((c) => splitter.push(c));
  const last = splitter.end();
  return last === undefined ? lines : [...lines, last];
}

describe('the lines of a watch response', () => {
  test('lines split across chunks, several in one chunk, empty chunks', () => {
    assert.deepEqual(split(['{"a":', '1}\n{"b":2}\n{"c"', '', ':3}\n']), ['{"a":1}', '{"b":2}', '{"c":3}']);
    assert.deepEqual(split(['\n', 'x\n\n']), ['', 'x', '']);
  });

  test('a line in many chunks comes whole, once', () => {
    const big = JSON.stringify({ data: 'x'.repeat(10_000) });
    const chunks: string[] = [];
    for (let i = 0; i < big.length; i += 7) chunks.push(big.slice(i, i + 7));
    chunks.push('\n{"next":1}\n');
    assert.deepEqual(split(chunks), [big, '{"next":1}']);
  });

  test('a last line without a newline at the end of the response is a line, not dropped', () => {
    assert.deepEqual(split(['{"a":1}\n{"b"', ':2}']), ['{"a":1}', '{"b":2}']);
    assert.deepEqual(split(['{"a":1}\n']), ['{"a":1}']);
    const splitter = new LineSplitter();
    assert.deepEqual(splitter.push('{"a":1}'), []);
    assert.equal(splitter.end(), '{"a":1}');
    assert.equal(splitter.end(), undefined, 'taken once');
  });
});
