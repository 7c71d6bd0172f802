import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Interner } from './interner.ts';

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
