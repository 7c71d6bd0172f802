import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblem, type Infer, normalizeValue, s, toOpenApi, validateValue } from './index.ts';
import { suggest } from './schema.ts';

const widget = s.object(
  {
    name: s.string({
      minLength: 1,
      maxLength: 8,
      pattern: '^[a-z]+$',
      patternMessage: 'must be lowercase letters',
    }),
    size: s.optional(s.integer({ minimum: 1, maximum: 10, default: 5 })),
    color: s.optional(s.string({ enum: ['red', 'green'] })),
    enabled: s.optional(s.boolean()),
    tags: s.optional(s.map(s.string({ maxLength: 3 }), { maxProperties: 2 })),
    parts: s.optional(
      s.array(s.object({ id: s.string(), count: s.integer({ minimum: 0 }) }), {
        listType: 'map',
        listMapKeys: ['id'],
        maxItems: 3,
      }),
    ),
    labels: s.optional(s.array(s.string(), { listType: 'set' })),
    frozen: s.optional(
      s.string({
        rules: [
          {
            cel: 'self == oldSelf',
            message: 'frozen is immutable',
            transition: true,
            check: (a, b) => a === b,
          },
        ],
      }),
    ),
  },
  {
    rules: [
      {
        cel: "self.name != 'bad'",
        message: 'name must not be bad',
        fieldPath: '.name',
        check: (self) => self.name !== 'bad',
      },
    ],
  },
);
type Widget = Infer<typeof widget>;

function problems(value: unknown, old?: unknown): string[] {
  return validateValue(widget, value, 'spec', old).map(formatProblem);
}

describe('schema DSL', () => {
  it('infers types with optional properties and enums', () => {
    const w: Widget = { name: 'a', color: 'red', tags: { x: 'y' }, parts: [{ id: 'p', count: 1 }] };
    // @ts-expect-error an enum is a union of its values
    const bad: Widget = { name: 'a', color: 'blue' };
    // @ts-expect-error required properties are required
    const missing: Widget = {};
    assert.ok(w && bad && missing);
  });

  it('accepts a valid value', () => {
    assert.deepEqual(problems({ name: 'abc', size: 3, enabled: true, labels: ['a', 'b'] }), []);
  });

  it('reports scalar problems with what to do', () => {
    assert.deepEqual(problems({ name: 'ABC', size: 0, color: 'Red', enabled: 'yes' }), [
      'spec.name: "ABC" must be lowercase letters',
      'spec.size: 0 is below the minimum 1',
      'spec.color: "Red" is not one of red, green; did you mean "red"?',
      'spec.enabled: must be a boolean (true or false), got a string ("yes")',
    ]);
    assert.deepEqual(problems({ name: 'a', enabled: 'true' }), [
      'spec.enabled: must be a boolean (true or false), got a string ("true"); remove the quotes',
    ]);
    assert.deepEqual(problems({ name: '' }), ['spec.name: must not be empty']);
    assert.deepEqual(problems({ name: 'abcdefghi' }), ['spec.name: is 9 characters long, the maximum is 8']);
    assert.deepEqual(problems({ name: 'a', size: 11 }), ['spec.size: 11 is above the maximum 10']);
    assert.deepEqual(problems('x'), ['spec: must be a mapping, got a string ("x")']);
  });

  it('rejects unknown fields, naming the known ones and the likely intent', () => {
    assert.deepEqual(problems({ name: 'a', sise: 2 }), [
      'spec.sise: unknown field "sise"; known fields: name, size, color, enabled, tags, parts, labels, frozen; did you mean "size"?',
    ]);
    assert.deepEqual(problems({ name: 'a', 'weird key': 1 }).length, 1);
    assert.equal(suggest('xyz', ['records', 'name']), undefined);
  });

  it('treats null properties as absent', () => {
    assert.deepEqual(problems({ name: 'a', size: null }), []);
    assert.deepEqual(problems({ name: null }), ['spec.name: required field is missing']);
  });

  it('validates maps, sets and list maps', () => {
    assert.deepEqual(problems({ name: 'a', tags: { a: 'long' } }), [
      'spec.tags[a]: is 4 characters long, the maximum is 3',
    ]);
    assert.deepEqual(problems({ name: 'a', tags: { a: '1', b: '2', c: '3' } }), [
      'spec.tags: must have at most 2 entries, got 3',
    ]);
    assert.deepEqual(problems({ name: 'a', labels: ['x', 'y', 'x'] }), [
      'spec.labels[2]: duplicate: the value "x" is already at spec.labels[0]; list entries must be unique',
    ]);
    assert.deepEqual(
      problems({
        name: 'a',
        parts: [
          { id: 'p', count: 1 },
          { id: 'p', count: 2 },
        ],
      }),
      [
        'spec.parts[1]: duplicate: an entry with id "p" is already at spec.parts[0]; list entries must be unique',
      ],
    );
    assert.deepEqual(problems({ name: 'a', parts: [{ id: 'p', count: -1 }] }), [
      'spec.parts[0].count: -1 is below the minimum 0',
    ]);
    assert.deepEqual(problems({ name: 'a', parts: [1, 2, 3, 4] }), [
      'spec.parts: must have at most 3 items, got 4',
    ]);
  });

  it('runs rules after the schema passes, at their fieldPath', () => {
    assert.deepEqual(problems({ name: 'bad' }), ['spec.name: name must not be bad']);
    // The rule does not run on a value that fails its schema.
    assert.deepEqual(problems({ name: 'bad', size: 0 }), ['spec.size: 0 is below the minimum 1']);
  });

  it('runs transition rules only with an old value', () => {
    assert.deepEqual(problems({ name: 'a', frozen: 'x' }), []);
    assert.deepEqual(problems({ name: 'a', frozen: 'x' }, { name: 'a', frozen: 'x' }), []);
    assert.deepEqual(problems({ name: 'a', frozen: 'y' }, { name: 'a', frozen: 'x' }), [
      'spec.frozen: frozen is immutable',
    ]);
    // Not set before: nothing to compare with, as on the API server.
    assert.deepEqual(problems({ name: 'a', frozen: 'y' }, { name: 'a' }), []);
  });

  it('counts lengths in code points, also where UTF-16 units and code points straddle a bound', () => {
    const short = s.object({ v: s.string({ minLength: 3, maxLength: 4 }) });
    const check = (v: string) => validateValue(short, { v }, 'spec').map(formatProblem);
    // Two characters of two UTF-16 units each: 4 units, 2 code points.
    assert.deepEqual(check('😀😀'), ['spec.v: is 2 characters long, the minimum is 3']);
    // Four of them: 8 units, 4 code points, within the maximum.
    assert.deepEqual(check('😀😀😀😀'), []);
    assert.deepEqual(check('😀😀😀😀😀'), ['spec.v: is 5 characters long, the maximum is 4']);
    assert.deepEqual(check('abc'), []);
    assert.deepEqual(check('ab'), ['spec.v: is 2 characters long, the minimum is 3']);
    // A lone surrogate counts as one.
    assert.deepEqual(check('\ud800\ud800\ud800'), []);
  });

  it('names fields that are not identifiers in brackets, at the top and below, each time alike', () => {
    const odd = s.object({ 'a b': s.string(), plain: s.optional(s.object({ 'x.y': s.integer() })) });
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(validateValue(odd, { plain: { 'x.y': 'no' } }, '').map(formatProblem), [
        '["a b"]: required field is missing',
        'plain["x.y"]: must be an integer, got a string ("no")',
      ]);
      assert.deepEqual(validateValue(odd, { 'a b': 'x', plain: {} }, 'spec').map(formatProblem), [
        'spec.plain["x.y"]: required field is missing',
      ]);
    }
  });

  it('returns a list of its own to each caller', () => {
    const a = validateValue(widget, { name: 'a' }, 'spec');
    a.push({ path: 'x', code: 'X', message: 'added by the caller' });
    assert.deepEqual(validateValue(widget, { name: 'a' }, 'spec'), []);
  });

  it('normalizes: defaults applied, nulls removed', () => {
    assert.deepEqual(normalizeValue(widget, { name: 'a', color: null, tags: { k: 'v' } }), {
      name: 'a',
      size: 5,
      tags: { k: 'v' },
    });
    // An integer -0 (YAML `-0`) is 0, as JSON has it.
    assert.ok(Object.is((normalizeValue(widget, { name: 'a', size: -0 }) as { size: number }).size, 0));
  });

  it('emits structural OpenAPI', () => {
    const out = toOpenApi(widget);
    assert.equal(out.type, 'object');
    assert.deepEqual(out.required, ['name']);
    const props = out.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(props.tags, {
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 3 },
      maxProperties: 2,
    });
    assert.deepEqual(props.size, { type: 'integer', minimum: 1, maximum: 10, default: 5 });
    assert.deepEqual(props.parts?.['x-kubernetes-list-map-keys'], ['id']);
    assert.deepEqual(props.frozen?.['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'frozen is immutable' },
    ]);
    assert.deepEqual(out['x-kubernetes-validations'], [
      { rule: "self.name != 'bad'", message: 'name must not be bad', fieldPath: '.name' },
    ]);
    assert.deepEqual(toOpenApi(s.object({})), { type: 'object' });
  });
});
