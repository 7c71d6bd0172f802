import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  classCode,
  className,
  isRecordTypeName,
  RECORD_TYPES,
  RRType,
  typeCode,
  typeName,
} from './rrtype.ts';

test('record type names and codes', () => {
  assert.equal(RECORD_TYPES.length, 17);
  assert.equal(RECORD_TYPES[0], 'A');
  assert.ok(isRecordTypeName('HTTPS'));
  assert.ok(!isRecordTypeName('https'));
  assert.ok(!isRecordTypeName('OPT'));
  for (const t of RECORD_TYPES) assert.equal(typeCode(t), RRType[t]);
  assert.equal(typeCode('mx'), 15);
  assert.equal(typeCode('TYPE123'), 123);
  assert.equal(typeCode('type65535'), 65535);
  assert.equal(typeCode('TYPE65536'), undefined);
  assert.equal(typeCode('TYPE'), undefined);
  assert.equal(typeCode('NOPE'), undefined);
  assert.equal(typeName(65401), 'ALIAS');
  assert.equal(typeName(28), 'AAAA');
  assert.equal(typeName(123), 'TYPE123');
});

test('classes', () => {
  assert.equal(className(1), 'IN');
  assert.equal(className(5), 'CLASS5');
  assert.equal(classCode('ch'), 3);
  assert.equal(classCode('CLASS7'), 7);
});
