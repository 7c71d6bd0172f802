import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Interner, NameRefInterner } from './interner.ts';

test('Interner returns the first equal string it saw, and undefined as it is', () => {
  const interner = new Interner();
  const first = ['name', 'space'].join('');
  const second = ['names', 'pace'].join('');
  assert.equal(interner.get(first), first);
  assert.equal(interner.get(second), 'namespace');
  assert.equal(interner.get(undefined), undefined);
});

test('Interner starts again past its limit and stays correct', () => {
  const interner = new Interner(2);
  for (const s of ['a', 'b', 'c', 'a', 'b', 'c']) assert.equal(interner.get(s), s);
});

test('NameRefInterner gives one frozen { name } per name, and starts again past its limit', () => {
  const refs = new NameRefInterner(2);
  const z = refs.get('z');
  assert.deepEqual(z, { name: 'z' });
  assert.ok(Object.isFrozen(z));
  assert.equal(refs.get(['', 'z'].join('')), z);
  assert.notEqual(refs.get('y'), z);
  // Full: a new map; the refs handed out stay as they were, equal ones are new from now on.
  const x = refs.get('x');
  assert.deepEqual(x, { name: 'x' });
  assert.deepEqual(refs.get('z'), { name: 'z' });
  assert.deepEqual(z, { name: 'z' });
});
