/**
 * A small schema language: one definition per field gives the TypeScript type (`Infer`), the runtime
 * validation used in folder mode (`validateValue`) and the Kubernetes structural OpenAPI v3 schema
 * published in the CRDs (`toOpenApi`).
 *
 * Every CEL rule (`x-kubernetes-validations`) carries an equivalent TypeScript `check`, so that the
 * manifests folder rejects exactly what the API server rejects. Patterns are written in the common
 * subset of RE2 (the API server) and ECMAScript (here): no look-around, no back-references.
 */

import { capped } from '../util/capped.ts';
import { pushAll } from '../util/push-all.ts';

/** One validation problem: where (`spec.records[1]`), what is wrong and what to do, and a stable code. */
export interface Problem {
  path: string;
  message: string;
  code: string;
}

/**
 * At most this many problems are reported for one document; the rest are counted in one more. A
 * document with tens of thousands of unknown fields would otherwise cost every reader of its problems
 * (locating each at its line is linear in the document: quadratic in all) and fill logs and statuses.
 */
export const MAX_PROBLEMS = 100;

/** The first `MAX_PROBLEMS` problems, and one saying how many more there are (code TOO_MANY_PROBLEMS). */
export function capProblems(problems: Problem[]): Problem[] {
  return capped(problems, MAX_PROBLEMS, (more) => ({
    path: '',
    code: 'TOO_MANY_PROBLEMS',
    message: `${more} more problem${more === 1 ? '' : 's'} not listed; fix the ones above first`,
  }));
}

/** `spec.records[1]: "10 mail" is ...` — the one-line form for logs and the CLI. */
export function formatProblem(p: Problem): string {
  return p.path === '' ? p.message : `${p.path}: ${p.message}`;
}

/**
 * A CEL rule and its TypeScript twin. `check` must accept exactly what `cel` accepts. Rules run only
 * when the value is present and its own schema (and its children's) is satisfied, like the API
 * server's. A transition rule (`transition: true`, using `oldSelf`) runs only on update, when the old
 * object had the field too.
 */
export interface Rule<T> {
  cel: string;
  message: string;
  check(self: T, oldSelf?: T): boolean;
  transition?: boolean;
  /** A JSONPath relative to the node (`.records`) to report the problem at, for rules on an object. */
  fieldPath?: string;
  /** Kubernetes' field error reason for the CEL rule (the default is FieldValueInvalid). */
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  /** Problem code in folder mode (UPPER_SNAKE_CASE); default `RULE`. */
  code?: string;
  /** A more specific message for folder mode, given the failing value and where it is. */
  detail?(self: T, oldSelf: T | undefined, path: string): string;
}

interface Base {
  description?: string;
  // biome-ignore lint/suspicious/noExplicitAny: rules are typed at the builder; the tree stores them erased
  rules?: readonly Rule<any>[];
  /** Set by `s.optional`: the property may be absent from its object. */
  optional?: boolean;
}

export interface StringSchema<T extends string = string> extends Base {
  kind: 'string';
  enum?: readonly T[];
  pattern?: string;
  /** What the pattern means, for folder-mode messages; a function gets the rejected value. */
  patternMessage?: string | ((value: string) => string);
  minLength?: number;
  maxLength?: number;
  format?: string;
  default?: T;
}

export interface IntegerSchema extends Base {
  kind: 'integer';
  minimum?: number;
  maximum?: number;
  format?: 'int32' | 'int64';
  default?: number;
}

export interface BooleanSchema extends Base {
  kind: 'boolean';
  default?: boolean;
}

export interface ArraySchema<I extends Schema = Schema> extends Base {
  kind: 'array';
  items: I;
  minItems?: number;
  maxItems?: number;
  /** `x-kubernetes-list-type`: `set` requires unique scalar items, `map` unique `listMapKeys`. */
  listType?: 'atomic' | 'set' | 'map';
  listMapKeys?: readonly string[];
}

export type Props = Record<string, Schema>;

export interface ObjectSchema<P extends Props = Props> extends Base {
  kind: 'object';
  properties: P;
}

/** A string-keyed map (`additionalProperties`). */
export interface MapSchema<V extends Schema = Schema> extends Base {
  kind: 'map';
  values: V;
  maxProperties?: number;
}

export type Schema =
  | StringSchema<string>
  | IntegerSchema
  | BooleanSchema
  | ArraySchema
  | ObjectSchema
  | MapSchema;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type OptionalKeys<P> = { [K in keyof P]: P[K] extends { optional: true } ? K : never }[keyof P];
type RequiredKeys<P> = Exclude<keyof P, OptionalKeys<P>>;

/** The object type for a property list; an object without properties must be empty (`{}`). */
export type InferObject<P extends Props> = [keyof P] extends [never]
  ? Record<string, never>
  : Simplify<{ [K in RequiredKeys<P>]: Infer<P[K]> } & { [K in OptionalKeys<P>]?: Infer<P[K]> }>;

/** The TypeScript type a schema describes. */
export type Infer<S> =
  S extends StringSchema<infer T>
    ? T
    : S extends IntegerSchema
      ? number
      : S extends BooleanSchema
        ? boolean
        : S extends ArraySchema<infer I>
          ? Infer<I>[]
          : S extends MapSchema<infer V>
            ? Record<string, Infer<V>>
            : S extends ObjectSchema<infer P>
              ? InferObject<P>
              : never;

type Opts<T> = { description?: string; rules?: readonly Rule<T>[] };
export type StringOpts<T extends string> = Opts<T> & Omit<StringSchema<T>, 'kind' | keyof Base>;
export type IntegerOpts = Opts<number> & Omit<IntegerSchema, 'kind' | keyof Base>;
export type ArrayOpts<T> = Opts<T[]> & Omit<ArraySchema, 'kind' | 'items' | keyof Base>;
export type MapOpts<T> = Opts<Record<string, T>> & Omit<MapSchema, 'kind' | 'values' | keyof Base>;

/** Schema builders. */
export const s = {
  string<const T extends string = string>(opts: StringOpts<T> = {}): StringSchema<T> {
    return { kind: 'string', ...opts };
  },
  integer(opts: IntegerOpts = {}): IntegerSchema {
    return { kind: 'integer', ...opts };
  },
  boolean(opts: Opts<boolean> & { default?: boolean } = {}): BooleanSchema {
    return { kind: 'boolean', ...opts };
  },
  array<I extends Schema>(items: I, opts: ArrayOpts<Infer<I>> = {}): ArraySchema<I> {
    return { kind: 'array', items, ...opts };
  },
  object<P extends Props>(properties: P, opts: Opts<InferObject<P>> = {}): ObjectSchema<P> {
    return { kind: 'object', properties, ...opts };
  },
  map<V extends Schema>(values: V, opts: MapOpts<Infer<V>> = {}): MapSchema<V> {
    return { kind: 'map', values, ...opts };
  },
  optional<S extends Schema>(schema: S): S & { optional: true } {
    return { ...schema, optional: true };
  },
};

// ---------------------------------------------------------------------------------------------------
// OpenAPI (Kubernetes structural schema)

export type JsonObject = { [key: string]: unknown };

/**
 * The Kubernetes structural OpenAPI v3 schema for a node: `type` on every node, no `$ref`,
 * `additionalProperties` only on maps (never beside `properties`), CEL rules as `x-kubernetes-validations`.
 * Keys come out in a fixed order so the generated YAML is stable.
 */
export function toOpenApi(schema: Schema): JsonObject {
  const out: JsonObject = {};
  if (schema.description !== undefined) out.description = schema.description;
  switch (schema.kind) {
    case 'string':
      out.type = 'string';
      if (schema.format !== undefined) out.format = schema.format;
      if (schema.enum !== undefined) out.enum = [...schema.enum];
      if (schema.pattern !== undefined) out.pattern = schema.pattern;
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case 'integer':
      out.type = 'integer';
      if (schema.format !== undefined) out.format = schema.format;
      if (schema.minimum !== undefined) out.minimum = schema.minimum;
      if (schema.maximum !== undefined) out.maximum = schema.maximum;
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case 'boolean':
      out.type = 'boolean';
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case 'array':
      out.type = 'array';
      out.items = toOpenApi(schema.items);
      if (schema.minItems !== undefined) out.minItems = schema.minItems;
      if (schema.maxItems !== undefined) out.maxItems = schema.maxItems;
      if (schema.listType !== undefined) out['x-kubernetes-list-type'] = schema.listType;
      if (schema.listMapKeys !== undefined) out['x-kubernetes-list-map-keys'] = [...schema.listMapKeys];
      break;
    case 'object': {
      out.type = 'object';
      const entries = Object.entries(schema.properties);
      if (entries.length > 0) {
        out.properties = Object.fromEntries(entries.map(([k, v]) => [k, toOpenApi(v)]));
        const required = entries.filter(([, v]) => v.optional !== true).map(([k]) => k);
        if (required.length > 0) out.required = required;
      }
      break;
    }
    case 'map':
      out.type = 'object';
      out.additionalProperties = toOpenApi(schema.values);
      if (schema.maxProperties !== undefined) out.maxProperties = schema.maxProperties;
      break;
  }
  if (schema.rules !== undefined && schema.rules.length > 0) {
    out['x-kubernetes-validations'] = schema.rules.map((r) => {
      const v: JsonObject = { rule: r.cel, message: r.message };
      if (r.fieldPath !== undefined) v.fieldPath = r.fieldPath;
      if (r.reason !== undefined) v.reason = r.reason;
      return v;
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Validation (folder mode)

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** `spec` + `records` → `spec.records`; keys that are not identifiers are bracketed. */
export function joinPath(path: string, key: string): string {
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** What a value is, for a message: never throws (a mapping's own `toString` is not called). */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return `a string (${quote(v)})`;
    case 'number':
      return Number.isInteger(v) ? `an integer (${v})` : `a number (${v})`;
    case 'boolean':
      return `a boolean (${v})`;
    case 'object':
      return 'a mapping';
    default:
      return typeof v;
  }
}

/** A value for messages: JSON-quoted and shortened. */
export function quote(v: string): string {
  const shown = v.length > 80 ? `${v.slice(0, 77)}...` : v;
  return JSON.stringify(shown);
}

/** Unicode code points, as the API server counts minLength/maxLength. */
function codePoints(v: string): number {
  let n = 0;
  for (const _ of v) n++;
  return n;
}

const regexCache = new Map<string, RegExp>();
function regex(pattern: string): RegExp {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    re = new RegExp(pattern);
    regexCache.set(pattern, re);
  }
  return re;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = prev[j]!;
      prev[j] = Math.min(above + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = above;
    }
  }
  return prev[b.length]!;
}

/** The closest known name, if it is close enough to be a likely typo. */
export function suggest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}

/** `unknown field "recrods"; known fields: a, b; did you mean "records"?` */
export function unknownFieldMessage(key: string, known: readonly string[]): string {
  const hint = suggest(key, known);
  const list = known.length === 0 ? 'none (use {})' : known.join(', ');
  return `unknown field ${quote(key)}; known fields: ${list}${hint === undefined ? '' : `; did you mean ${quote(hint)}?`}`;
}

function typeProblem(expected: string, value: unknown, path: string): Problem {
  let hint = '';
  if (typeof value === 'string') {
    const quotedNumber = expected === 'an integer' && /^-?[0-9]+$/.test(value.trim());
    const quotedBoolean = expected.startsWith('a boolean') && /^(true|false)$/.test(value.trim());
    if (quotedNumber || quotedBoolean) hint = '; remove the quotes';
  }
  return { path, code: 'INVALID_TYPE', message: `must be ${expected}, got ${describeValue(value)}${hint}` };
}

function plural(n: number, word: string): string {
  if (n === 1) return `${n} ${word}`;
  return word.endsWith('y') ? `${n} ${word.slice(0, -1)}ies` : `${n} ${word}s`;
}

/**
 * Validates a value against a schema. `path` names the value (`spec`); problems carry full paths.
 * `oldValue` is the previous version of the same value, for transition rules (immutability).
 * Absent (`undefined`) or `null` object properties count as not set, as the API server prunes nulls.
 */
export function validateValue(schema: Schema, value: unknown, path: string, oldValue?: unknown): Problem[] {
  const problems: Problem[] = [];
  check(schema, value, path, oldValue, problems);
  return problems;
}

/**
 * An object schema's properties as the validator walks them, computed once per schema: a manifest
 * folder checks the same few schemas once per document, hundreds of thousands of times at start-up.
 */
interface PropertyPlan {
  key: string;
  schema: Schema;
  /** What follows the parent's path to name this property (`.key`, or `["key"]`; see `joinPath`). */
  segment: string;
  /** Absent is a problem: neither optional nor defaulted. */
  required: boolean;
  /** Applied when absent (`normalize`). */
  hasDefault: boolean;
}

const plans = new WeakMap<ObjectSchema, PropertyPlan[]>();

function planOf(schema: ObjectSchema): PropertyPlan[] {
  let plan = plans.get(schema);
  if (plan === undefined) {
    plan = Object.entries(schema.properties).map(([key, prop]) => ({
      key,
      schema: prop,
      segment: IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`,
      required: prop.optional !== true && !hasDefault(prop),
      hasDefault: hasDefault(prop),
    }));
    plans.set(schema, plan);
  }
  return plan;
}

/** `joinPath` for a planned property. */
function propertyPath(path: string, property: PropertyPlan): string {
  return path === '' && property.segment.charCodeAt(0) === 46 /* . */
    ? property.key
    : path + property.segment;
}

const enums = new WeakMap<StringSchema, ReadonlySet<string>>();

function inEnum(schema: StringSchema & { enum: readonly string[] }, value: string): boolean {
  let set = enums.get(schema);
  if (set === undefined) {
    set = new Set(schema.enum);
    enums.set(schema, set);
  }
  return set.has(value);
}

/**
 * Whether a string of `length` UTF-16 code units may be outside the schema's bounds in code points:
 * it has between `ceil(length / 2)` and `length` of them, so they are counted only when that range
 * crosses a bound.
 */
function lengthInDoubt(schema: StringSchema, length: number): boolean {
  return (
    (schema.minLength !== undefined && Math.ceil(length / 2) < schema.minLength) ||
    (schema.maxLength !== undefined && length > schema.maxLength)
  );
}

/** `validateValue` appending to `problems`; a node's rules run only when its subtree added none. */
function check(schema: Schema, value: unknown, path: string, oldValue: unknown, problems: Problem[]): void {
  const before = problems.length;
  switch (schema.kind) {
    case 'string': {
      if (typeof value !== 'string') {
        problems.push(typeProblem('a string', value, path));
        return;
      }
      if (schema.enum !== undefined && !inEnum(schema as StringSchema & { enum: readonly string[] }, value)) {
        const upper = schema.enum.find((e) => e.toLowerCase() === value.toLowerCase());
        problems.push({
          path,
          code: 'NOT_IN_ENUM',
          message: `${quote(value)} is not one of ${schema.enum.join(', ')}${upper === undefined ? '' : `; did you mean ${quote(upper)}?`}`,
        });
        return;
      }
      if (lengthInDoubt(schema, value.length)) {
        const length = codePoints(value);
        if (schema.minLength !== undefined && length < schema.minLength) {
          problems.push({
            path,
            code: 'TOO_SHORT',
            message:
              schema.minLength === 1
                ? 'must not be empty'
                : `is ${plural(length, 'character')} long, the minimum is ${schema.minLength}`,
          });
          return;
        }
        if (schema.maxLength !== undefined && length > schema.maxLength) {
          problems.push({
            path,
            code: 'TOO_LONG',
            message: `is ${plural(length, 'character')} long, the maximum is ${schema.maxLength}`,
          });
          return;
        }
      }
      if (schema.pattern !== undefined && !regex(schema.pattern).test(value)) {
        // A failing rule says it more precisely (e.g. "add the trailing dot"): report that instead.
        runRules(schema, value, path, oldValue, problems);
        if (problems.length > before) return;
        const meaning =
          typeof schema.patternMessage === 'function' ? schema.patternMessage(value) : schema.patternMessage;
        problems.push({
          path,
          code: 'PATTERN',
          message:
            meaning === undefined
              ? `${quote(value)} does not match the pattern ${schema.pattern}`
              : `${quote(value)} ${meaning}`,
        });
        return;
      }
      break;
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        problems.push(typeProblem('an integer', value, path));
        return;
      }
      if (schema.minimum !== undefined && value < schema.minimum) {
        problems.push({
          path,
          code: 'TOO_SMALL',
          message: `${value} is below the minimum ${schema.minimum}`,
        });
      } else if (schema.maximum !== undefined && value > schema.maximum) {
        problems.push({
          path,
          code: 'TOO_LARGE',
          message: `${value} is above the maximum ${schema.maximum}`,
        });
      }
      break;
    }
    case 'boolean':
      if (typeof value !== 'boolean') {
        problems.push(typeProblem('a boolean (true or false)', value, path));
        return;
      }
      break;
    case 'array': {
      if (!Array.isArray(value)) {
        problems.push(typeProblem('a list', value, path));
        return;
      }
      if (schema.minItems !== undefined && value.length < schema.minItems) {
        problems.push({
          path,
          code: 'TOO_FEW_ITEMS',
          message: `must have at least ${plural(schema.minItems, 'item')}, got ${value.length}`,
        });
      }
      if (schema.maxItems !== undefined && value.length > schema.maxItems) {
        problems.push({
          path,
          code: 'TOO_MANY_ITEMS',
          message: `must have at most ${plural(schema.maxItems, 'item')}, got ${value.length}`,
        });
        return; // do not validate thousands of items past the limit
      }
      const oldItems = Array.isArray(oldValue) ? oldValue : undefined;
      value.forEach((item, i) => {
        const old = oldItems === undefined ? undefined : correlate(schema, item, oldItems);
        check(schema.items, item, `${path}[${i}]`, old, problems);
      });
      if (problems.length === before) pushAll(problems, uniqueness(schema, value, path));
      break;
    }
    case 'object': {
      if (!isPlainObject(value)) {
        problems.push(typeProblem('a mapping', value, path));
        return;
      }
      for (const key of Object.keys(value)) {
        if (!Object.hasOwn(schema.properties, key)) {
          problems.push({
            path: joinPath(path, key),
            code: 'UNKNOWN_FIELD',
            message: unknownFieldMessage(key, Object.keys(schema.properties)),
          });
        }
      }
      const old = isPlainObject(oldValue) ? oldValue : undefined;
      for (const property of planOf(schema)) {
        const v = value[property.key];
        if (v === undefined || v === null) {
          if (property.required) {
            problems.push({
              path: propertyPath(path, property),
              code: 'REQUIRED',
              message: 'required field is missing',
            });
          }
          continue;
        }
        const o = old?.[property.key];
        check(property.schema, v, propertyPath(path, property), o === null ? undefined : o, problems);
      }
      break;
    }
    case 'map': {
      if (!isPlainObject(value)) {
        problems.push(typeProblem('a mapping', value, path));
        return;
      }
      const entries = Object.entries(value);
      if (schema.maxProperties !== undefined && entries.length > schema.maxProperties) {
        problems.push({
          path,
          code: 'TOO_MANY_ITEMS',
          message: `must have at most ${plural(schema.maxProperties, 'entry')}, got ${entries.length}`,
        });
        return;
      }
      const old = isPlainObject(oldValue) ? oldValue : undefined;
      for (const [key, v] of entries) check(schema.values, v, `${path}[${key}]`, old?.[key], problems);
      break;
    }
  }
  if (problems.length === before) runRules(schema, value, path, oldValue, problems);
}

export function hasDefault(p: Schema): p is Schema & { default: string | number | boolean } {
  return 'default' in p && p.default !== undefined;
}

function runRules(
  schema: Schema,
  value: unknown,
  path: string,
  oldValue: unknown,
  problems: Problem[],
): void {
  if (schema.rules === undefined) return;
  for (const rule of schema.rules) {
    if (rule.transition === true && oldValue === undefined) continue;
    let ok: boolean;
    try {
      ok = rule.check(value, rule.transition === true ? oldValue : undefined);
    } catch {
      ok = false;
    }
    if (ok) continue;
    const at = rule.fieldPath === undefined ? path : path + rule.fieldPath;
    problems.push({
      path: at,
      code: rule.code ?? 'RULE',
      message: rule.detail?.(value, oldValue, path) ?? rule.message,
    });
  }
}

/** The old item matching a new one in a list-type map (by its keys); other lists do not correlate. */
function correlate(schema: ArraySchema, item: unknown, oldItems: readonly unknown[]): unknown {
  const keys = schema.listMapKeys;
  if (schema.listType !== 'map' || keys === undefined || !isPlainObject(item)) return undefined;
  return oldItems.find((o) => isPlainObject(o) && keys.every((k) => o[k] === item[k]));
}

function uniqueness(schema: ArraySchema, value: readonly unknown[], path: string): Problem[] {
  if (schema.listType !== 'set' && schema.listType !== 'map') return [];
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  value.forEach((item, i) => {
    const keys = schema.listMapKeys ?? [];
    const identity =
      schema.listType === 'map' && isPlainObject(item)
        ? JSON.stringify(keys.map((k) => item[k]))
        : JSON.stringify(item);
    const first = seen.get(identity);
    if (first === undefined) {
      seen.set(identity, i);
      return;
    }
    const what =
      schema.listType === 'map' && isPlainObject(item)
        ? `an entry with ${keys.map((k) => `${k} ${JSON.stringify(item[k])}`).join(', ')}`
        : `the value ${identity}`;
    problems.push({
      path: `${path}[${i}]`,
      code: 'DUPLICATE_ENTRY',
      message: `duplicate: ${what} is already at ${path}[${first}]; list entries must be unique`,
    });
  });
  return problems;
}

/**
 * A clean copy of a value that `validateValue` accepted: `null` properties removed, schema defaults
 * applied to absent properties. Unknown fields cannot occur (validation rejects them).
 */
export function normalizeValue<S extends Schema>(schema: S, value: unknown): Infer<S> {
  return normalize(schema, value) as Infer<S>;
}

/** `normalizeValue` for a schema known only as `Schema`. */
export function normalize(schema: Schema, value: unknown): unknown {
  switch (schema.kind) {
    case 'array':
      return (value as unknown[]).map((item) => normalize(schema.items, item));
    case 'map':
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, normalize(schema.values, v)]),
      );
    case 'object': {
      const out: Record<string, unknown> = {};
      const obj = value as Record<string, unknown>;
      for (const property of planOf(schema)) {
        const v = obj[property.key];
        if (v !== undefined && v !== null) out[property.key] = normalize(property.schema, v);
        else if (property.hasDefault) out[property.key] = (property.schema as { default: unknown }).default;
      }
      return out;
    }
    case 'integer':
      // YAML's `-0` is the integer 0, as JSON (the state log, the API server) has it.
      return value === 0 ? 0 : value;
    default:
      return value;
  }
}

// ---------------------------------------------------------------------------------------------------
// Compiled acceptance (the common case of a valid value)

/** What an `Accept` answers for a value `validateValue` would find a problem in. */
export const REJECTED: unique symbol = Symbol('rejected');

/**
 * A schema compiled once into a function of a value: `normalize`'s clean copy when `validateValue`
 * (without an old value) would find no problem in it, `REJECTED` when it would find one. It builds no
 * path and no message: a caller that gets `REJECTED` runs `validateValue` for the problems. Checked
 * against `validateValue` by `validate-fast.test.ts` (repository manifests and seeded mutations).
 */
export type Accept = (value: unknown) => unknown;

const accepts = new WeakMap<Schema, Accept>();
/** `Object.hasOwn` as V8 answers it fastest inside a `for...in` over the same object (see resource.ts). */
const hasOwn = Object.prototype.hasOwnProperty;

/** `schema` compiled (once per schema object) into an `Accept`. */
export function compileAccept(schema: Schema): Accept {
  let accept = accepts.get(schema);
  if (accept === undefined) {
    accept = withRules(schema, compileNode(schema));
    accepts.set(schema, accept);
  }
  return accept;
}

/** The node's rules after its own check and its children's, as `check` runs them (no old value). */
function withRules(schema: Schema, accept: Accept): Accept {
  // Transition rules need an old value: without one they are skipped, as in `runRules`.
  const rules = rulesOf(schema);
  if (rules.length === 0) return accept;
  return (value) => {
    const out = accept(value);
    if (out === REJECTED || !rulesHold(rules, value)) return REJECTED;
    return out;
  };
}

/** The node's rules without an old value (transition rules skipped), as `withRules` runs them. */
export function rulesOf(schema: Schema): readonly Rule<unknown>[] {
  return (schema.rules ?? []).filter((r) => r.transition !== true);
}

/** Whether every rule holds for `value` (a rule that throws does not), as `check` runs them without an old value. */
export function rulesHold(rules: readonly Rule<unknown>[], value: unknown): boolean {
  for (const rule of rules) {
    let ok: boolean;
    try {
      ok = rule.check(value, undefined);
    } catch {
      ok = false;
    }
    if (!ok) return false;
  }
  return true;
}

function compileNode(schema: Schema): Accept {
  switch (schema.kind) {
    case 'string': {
      const values = schema.enum === undefined ? undefined : new Set<string>(schema.enum);
      const pattern = schema.pattern === undefined ? undefined : regex(schema.pattern);
      const { minLength, maxLength } = schema;
      const bounded = minLength !== undefined || maxLength !== undefined;
      return (value) => {
        if (typeof value !== 'string') return REJECTED;
        if (values !== undefined && !values.has(value)) return REJECTED;
        if (bounded && lengthInDoubt(schema, value.length)) {
          const length = codePoints(value);
          if (minLength !== undefined && length < minLength) return REJECTED;
          if (maxLength !== undefined && length > maxLength) return REJECTED;
        }
        // A pattern that fails is always a problem (the rule's, or PATTERN).
        if (pattern !== undefined && !pattern.test(value)) return REJECTED;
        return value;
      };
    }
    case 'integer': {
      const { minimum, maximum } = schema;
      return (value) => {
        if (typeof value !== 'number' || !Number.isInteger(value)) return REJECTED;
        if (minimum !== undefined && value < minimum) return REJECTED;
        if (maximum !== undefined && value > maximum) return REJECTED;
        return value === 0 ? 0 : value;
      };
    }
    case 'boolean':
      return (value) => (typeof value === 'boolean' ? value : REJECTED);
    case 'array': {
      const item = compileAccept(schema.items);
      const { minItems, maxItems } = schema;
      const unique = schema.listType === 'set' || schema.listType === 'map';
      return (value) => {
        if (!Array.isArray(value)) return REJECTED;
        if (minItems !== undefined && value.length < minItems) return REJECTED;
        if (maxItems !== undefined && value.length > maxItems) return REJECTED;
        const out: unknown[] = new Array(value.length);
        for (let i = 0; i < value.length; i++) {
          // A hole (never from YAML or JSON) reads as undefined, which no schema accepts: the full
          // check, which skips holes, decides then.
          const v = item(value[i]);
          if (v === REJECTED) return REJECTED;
          out[i] = v;
        }
        if (unique && uniqueness(schema, value, '').length > 0) return REJECTED;
        return out;
      };
    }
    case 'object': {
      const properties = schema.properties;
      // Compiled on first use: schemas may refer to each other in any order of definition.
      let plan: { key: string; accept: Accept; required: boolean; fallback: unknown }[] | undefined;
      const planned = () =>
        planOf(schema).map((p) => ({
          key: p.key,
          accept: compileAccept(p.schema),
          required: p.required,
          fallback: p.hasDefault ? (p.schema as { default: unknown }).default : undefined,
        }));
      return (value) => {
        if (!isPlainObject(value)) return REJECTED;
        // `check`'s unknown fields: own enumerable keys (`for...in` lists them, and inherited ones).
        for (const key in value) {
          if (hasOwn.call(value, key) && !Object.hasOwn(properties, key)) return REJECTED;
        }
        plan ??= planned();
        const out: Record<string, unknown> = {};
        for (let i = 0; i < plan.length; i++) {
          const p = plan[i]!;
          const v = value[p.key];
          if (v === undefined || v === null) {
            if (p.required) return REJECTED;
            if (p.fallback !== undefined) out[p.key] = p.fallback;
            continue;
          }
          const n = p.accept(v);
          if (n === REJECTED) return REJECTED;
          out[p.key] = n;
        }
        return out;
      };
    }
    case 'map': {
      const values = compileAccept(schema.values);
      const { maxProperties } = schema;
      return (value) => {
        if (!isPlainObject(value)) return REJECTED;
        const entries = Object.entries(value);
        if (maxProperties !== undefined && entries.length > maxProperties) return REJECTED;
        for (const entry of entries) {
          const n = values(entry[1]);
          if (n === REJECTED) return REJECTED;
          entry[1] = n;
        }
        return Object.fromEntries(entries);
      };
    }
  }
}
