import assert from 'node:assert/strict';
import { test } from 'node:test';
import { v8FlagValue } from './v8-flag-override.ts';

const FLAG = '--min-semi-space-size';
const VAR = 'ZONEKEEPER_EXAMPLE';
const ask = (env: NodeJS.ProcessEnv, execArgv: string[] = []) =>
  v8FlagValue(FLAG, VAR, 64, { env, execArgv });

test('the environment variable: unset or empty the default, a whole number, 0 or off none, else invalid', () => {
  assert.deepEqual(ask({}), { value: 64 });
  assert.deepEqual(ask({ [VAR]: '' }), { value: 64 });
  assert.deepEqual(ask({ [VAR]: ' 16 ' }), { value: 16 });
  for (const off of ['0', 'off', 'OFF', ' off '])
    assert.deepEqual(ask({ [VAR]: off }), { value: undefined, skipped: 'off' });
  for (const bad of ['-1', '1.5', '16MB', 'on', '0x10'])
    assert.deepEqual(ask({ [VAR]: bad }), { value: undefined, skipped: 'invalid' }, bad);
});

test("Node's own flag wins, with dashes or underscores, on the command line or in NODE_OPTIONS", () => {
  const node = { value: undefined, skipped: 'node-flag' };
  for (const arg of [FLAG, `${FLAG}=8`, '--min_semi_space_size', '--min_semi_space_size=8'])
    assert.deepEqual(ask({ [VAR]: '16' }, ['--expose-gc', arg]), node, arg);
  assert.deepEqual(ask({ NODE_OPTIONS: `--max-old-space-size=4096 ${FLAG}=8` }), node);
  // Another flag that begins alike is not this one.
  assert.deepEqual(ask({}, [`${FLAG}-extra=1`, '--min-semi-space']), { value: 64 });
});
