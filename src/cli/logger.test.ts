import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger, formatValue } from './logger.ts';

function logged(fields: Record<string, unknown>): string {
  let line = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      line += chunk.toString();
      done();
    },
  });
  createLogger(stream)('warn', 'ExternalDNS webhook: 3 endpoint(s) not written', fields);
  return line;
}

test('a field that is an object or a list is written as JSON, never [object Object]', () => {
  const line = logged({
    namespace: 'edns',
    codes: { NOT_DELEGATED: 2, INVALID_CHANGE: 1 },
    examples: ['a.example.com A (NOT_DELEGATED): not here', 'b "quoted"'],
    more: 4,
  });
  assert.doesNotMatch(line, /\[object Object\]/);
  assert.match(
    line,
    / warn {2}ExternalDNS webhook: 3 endpoint\(s\) not written namespace="edns" codes=\{"NOT_DELEGATED":2,"INVALID_CHANGE":1\} examples=\["a\.example\.com A \(NOT_DELEGATED\): not here","b \\"quoted\\""\] more=4\n$/,
  );
  assert.equal(line.split('\n').length, 2, 'one line');
});

test('strings are quoted (a newline stays on the line); numbers, booleans, null and undefined as they are', () => {
  assert.equal(formatValue('two\nlines'), '"two\\nlines"');
  assert.equal(formatValue(3), '3');
  assert.equal(formatValue(false), 'false');
  assert.equal(formatValue(null), 'null');
  assert.equal(formatValue(undefined), 'undefined');
  assert.equal(formatValue(10n), '10');
  assert.equal(formatValue(new Error('EMFILE: too many open files')), '"EMFILE: too many open files"');
  assert.equal(formatValue(new Set(['a'])), '["a"]');
  assert.equal(formatValue(new Map([['k', 1]])), '{"k":1}');
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  assert.equal(formatValue(cycle), '"[object Object]"');
});
