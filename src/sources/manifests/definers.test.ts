import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Definers } from './definers.ts';

test('one file per object is held as that file; several as a set, in path order', () => {
  const d = new Definers();
  d.add('DNSZone/a/x', 'b.yaml');
  d.add('DNSZone/a/x', 'b.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  d.add('DNSZone/a/x', 'a.yaml');
  d.add('DNSZone/a/x', 'c.yaml');
  assert.deepEqual(d.files('DNSZone/a/x'), ['a.yaml', 'b.yaml', 'c.yaml']);
  assert.deepEqual([...d.duplicates()], [['DNSZone/a/x', ['a.yaml', 'b.yaml', 'c.yaml']]]);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), true);
  assert.equal(d.remove('DNSZone/a/x', 'a.yaml'), false);
  assert.equal(d.remove('DNSZone/a/x', 'c.yaml'), true);
  assert.deepEqual(d.files('DNSZone/a/x'), ['b.yaml']);
  assert.deepEqual([...d.duplicates()], []);
  assert.equal(d.remove('DNSZone/a/x', 'other.yaml'), false);
  assert.equal(d.has('DNSZone/a/x'), true);
  assert.equal(d.remove('DNSZone/a/x', 'b.yaml'), true);
  assert.equal(d.has('DNSZone/a/x'), false);
  assert.equal(d.size, 0);
  assert.deepEqual(d.files('DNSZone/a/x'), []);
});
