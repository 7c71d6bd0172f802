/**
 * `acceptResource` (the checks compiled once per kind, no problem built) against `checkResource` (the
 * full check, every problem): for every object, the first accepts exactly when the second finds no
 * problem, and then makes the same clean copy, key for key and in the same order. `validateResource`
 * takes the first and falls back to the second, so its answers, problems included, are the full check's.
 *
 * Objects: every document of every YAML file and Markdown `yaml` block of the repository, the
 * examples of `test/support/api-examples.ts`, and seeded mutations of all of these (wrong types,
 * missing and extra fields, bad names, bad records, huge values, duplicates), each checked with and
 * without `keepStatus`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import jsYaml from 'js-yaml';
import {
  exampleRecordSet,
  exampleZoneClass,
  invalidCases,
  validCases,
} from '../../test/support/api-examples.ts';
import { prng } from '../../test/support/prng.ts';
import { repositoryYaml } from '../../test/support/repository-yaml.ts';
import {
  acceptResource,
  acceptUsualFields,
  acceptUsualRecordSet,
  checkResource,
  validateResource,
} from './resource.ts';

/** Every document of the repository's YAML files and Markdown `yaml` blocks that js-yaml reads. */
function repositoryDocuments(): { label: string; value: unknown }[] {
  const texts = repositoryYaml();
  const out: { label: string; value: unknown }[] = [];
  for (const { label, text } of texts) {
    try {
      jsYaml.loadAll(
        text,
        (value) => {
          if (value !== null && value !== undefined) out.push({ label, value });
        },
        { schema: jsYaml.CORE_SCHEMA },
      );
    } catch {
      // Helm templates and the like: not manifests.
    }
  }
  return out;
}

/** Keys of every mapping in the value, in order, depth first (key order is part of "the same copy"). */
function keyOrder(value: unknown, out: string[][] = []): string[][] {
  if (Array.isArray(value)) for (const v of value) keyOrder(v, out);
  else if (typeof value === 'object' && value !== null) {
    out.push(Object.keys(value));
    for (const v of Object.values(value)) keyOrder(v, out);
  }
  return out;
}

const counts = { accepted: 0, rejected: 0 };

function compare(value: unknown, label: string): void {
  for (const keepStatus of [false, true]) {
    const fast = acceptResource(value, keepStatus);
    const full = checkResource(value, undefined, { keepStatus });
    assert.equal(
      fast !== undefined,
      full.ok,
      `${label} (keepStatus ${keepStatus}): compiled ${fast !== undefined ? 'accepts' : 'rejects'}, full check ${full.ok ? 'accepts' : `finds ${JSON.stringify(full.problems)}`}`,
    );
    if (full.ok) {
      assert.deepStrictEqual(fast, full.resource, label);
      assert.deepStrictEqual(keyOrder(fast), keyOrder(full.resource), label);
      counts.accepted++;
    } else counts.rejected++;
    // validateResource answers as the full check does, problems and all.
    assert.deepStrictEqual(validateResource(value, undefined, { keepStatus }), full, label);
  }
  compareUsual(value, label);
}

/**
 * `acceptUsualRecordSet` takes an object only when `acceptResource` accepts it and makes the usual
 * shape of it, exactly these objects and keys in this order, with the same values (the records the
 * same strings); `-0` read as 0 as there. Otherwise it declines (and the parse thread takes the
 * general path).
 */
const usualCounts = { taken: 0, declinedUsual: 0 };

function compareUsual(value: unknown, label: string): void {
  const usual = acceptUsualRecordSet(value, 7);
  const accepted = acceptResource(value);
  const expected =
    accepted === undefined ? undefined : usualOf(accepted as unknown as Record<string, unknown>);
  if (usual === undefined) {
    if (expected !== undefined) usualCounts.declinedUsual++;
    return;
  }
  usualCounts.taken++;
  assert.ok(accepted, `${label}: taken as usual, but acceptResource refuses it`);
  assert.deepStrictEqual(usual, expected, label);
  if (usual.length === 8) assert.ok(!Object.is(usual[7], -0), label);
}

/** The usual values of a clean copy, or undefined when it is not of exactly that shape. */
function usualOf(r: Record<string, unknown>): unknown[] | undefined {
  const keys = (o: unknown) => (typeof o === 'object' && o !== null ? Object.keys(o).join() : '');
  const m = r.metadata as Record<string, unknown>;
  const spec = r.spec as Record<string, unknown>;
  if (keys(r) !== 'apiVersion,kind,metadata,spec' || r.kind !== 'DNSRecordSet') return undefined;
  if (keys(m) !== 'name,namespace') return undefined;
  const withTtl = keys(spec) === 'zoneRef,name,type,ttl,records';
  if (!withTtl && keys(spec) !== 'zoneRef,name,type,records') return undefined;
  const ref = spec.zoneRef as Record<string, unknown>;
  if (keys(ref) !== 'name') return undefined;
  const values = [7, m.namespace, m.name, ref.name, spec.name, spec.type, spec.records];
  return withTtl ? [...values, spec.ttl] : values;
}

/** Values that are wrong (or right) somewhere in a manifest. */
const HUGE = 'a'.repeat(70_000);
const SCALARS: unknown[] = [
  null,
  0,
  -0,
  1,
  -1,
  1.5,
  300,
  2 ** 31,
  Number.NaN,
  true,
  false,
  '',
  'x',
  'www',
  '@',
  '*',
  '*.apps',
  'WWW',
  'a..b',
  'a.',
  '-a',
  'a_b',
  'www.example.com.',
  'example.com',
  'example-com',
  'team-a',
  'builtin',
  '192.0.2.1',
  '2001:db8::1',
  '10 mail',
  '"v=spf1 -all"',
  'A',
  'AAAA',
  'CNAME',
  'ALIAS',
  'NS',
  'SOA',
  'TXT',
  'MX',
  'a',
  '300',
  'true',
  'All',
  'Weighted',
  'ActiveActive',
  'HTTP',
  'TCP',
  '/healthz',
  'hostmaster@example.net',
  'é',
  '\u{1F600}'.repeat(40),
  'x'.repeat(63),
  'x'.repeat(64),
  'x'.repeat(254),
  HUGE,
];
const KEYS = [
  'name',
  'namespace',
  'labels',
  'annotations',
  'finalizers',
  'uid',
  'generation',
  'ttl',
  'records',
  'type',
  'zoneRef',
  'recrods',
  'status',
  'spec',
  'metadata',
  'healthCheck',
  'selection',
  'placement',
  'weights',
  'port',
  'protocol',
  'domainName',
  'className',
  'soa',
  'delegations',
  'conditions',
  'observedGeneration',
  'fqdn',
  'constructor',
  '__proto__',
  'a/b',
  'Bad Key',
];

function pick<T>(rng: () => number, list: readonly T[]): T {
  return list[Math.floor(rng() * list.length)]!;
}

/** A value of any shape: a scalar, a list or a mapping of a few of them. */
function anyValue(rng: () => number, depth = 0): unknown {
  const r = rng();
  if (depth > 1 || r < 0.6) return pick(rng, SCALARS);
  if (r < 0.8) return Array.from({ length: Math.floor(rng() * 3) }, () => anyValue(rng, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(rng() * 3); i > 0; i--) setOwn(o, pick(rng, KEYS), anyValue(rng, depth + 1));
  return o;
}

/** An own property, `__proto__` too (as JSON.parse and the YAML readers make it). */
function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

type Slot = { parent: Record<string, unknown> | unknown[]; key: string | number; value: unknown };

/** Every place in the value (mappings' entries and lists' items), depth first. */
function slots(value: unknown, out: Slot[] = []): Slot[] {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push({ parent: value, key: i, value: v });
      slots(v, out);
    });
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push({ parent: value as Record<string, unknown>, key: k, value: v });
      slots(v, out);
    }
  }
  return out;
}

function containers(value: unknown, out: (Record<string, unknown> | unknown[])[] = []) {
  if (Array.isArray(value)) {
    out.push(value);
    for (const v of value) containers(v, out);
  } else if (typeof value === 'object' && value !== null) {
    out.push(value as Record<string, unknown>);
    for (const v of Object.values(value)) containers(v, out);
  }
  return out;
}

/** One change somewhere in the object (in place). */
function mutate(rng: () => number, obj: Record<string, unknown>): void {
  const all = slots(obj);
  const r = rng();
  if (r < 0.15 && all.length > 0) {
    // A field or an item removed.
    const s = pick(rng, all);
    if (Array.isArray(s.parent)) s.parent.splice(s.key as number, 1);
    else delete s.parent[s.key as string];
  } else if (r < 0.45 && all.length > 0) {
    // A value replaced: another type, a bad or huge string, a right one elsewhere.
    const s = pick(rng, all);
    const v = anyValue(rng);
    if (Array.isArray(s.parent)) s.parent[s.key as number] = v;
    else setOwn(s.parent, s.key as string, v);
  } else if (r < 0.6 && all.length > 0) {
    // A string edited: letter case, a character more or less, a dot, emptied.
    const strings = all.filter((s) => typeof s.value === 'string');
    if (strings.length === 0) return;
    const s = pick(rng, strings);
    const text = s.value as string;
    const edits = [
      text.toUpperCase(),
      `${text}.`,
      text.slice(1),
      `${text}-`,
      `${text} x`,
      '',
      text.replace(/\./g, '..'),
      `${text}${HUGE}`,
    ];
    const v = pick(rng, edits);
    if (Array.isArray(s.parent)) s.parent[s.key as number] = v;
    else setOwn(s.parent, s.key as string, v);
  } else if (r < 0.85) {
    // A field added to a mapping (known somewhere, a typo, or odd), or an item to a list.
    const c = pick(rng, containers(obj));
    if (Array.isArray(c)) c.push(rng() < 0.5 && c.length > 0 ? structuredClone(pick(rng, c)) : anyValue(rng));
    else setOwn(c, pick(rng, KEYS), anyValue(rng));
  } else if (r < 0.92) {
    // A list made long: duplicates, past a maximum.
    const lists = containers(obj).filter((c): c is unknown[] => Array.isArray(c) && c.length > 0);
    if (lists.length === 0) return;
    const list = pick(rng, lists);
    const n = pick(rng, [1, 2, 63, 64, 1000, 1001]);
    for (let i = list.length; i < n; i++) list.push(structuredClone(list[i % list.length]));
  } else {
    // Metadata with labels and annotations, good and bad.
    const meta = obj.metadata;
    if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return;
    const map: Record<string, unknown> = {};
    setOwn(
      map,
      pick(rng, [
        'app',
        'example.com/team',
        'a/b/c',
        'Bad Key',
        '-x',
        'x'.repeat(64),
        `${'d.'.repeat(127)}/x`,
      ]),
      pick(rng, ['web', '', 'bad value!', 'x'.repeat(64), 1, null, 'a.b-c_d']),
    );
    setOwn(meta as Record<string, unknown>, pick(rng, ['labels', 'annotations']), map);
  }
}

describe('acceptResource answers as checkResource', () => {
  const documents = repositoryDocuments();
  const bases: unknown[] = [
    ...documents.map((d) => d.value),
    ...validCases().map((c) => c.object),
    ...invalidCases().map((c) => c.object),
  ];

  it('for every document of the repository and every example', () => {
    for (const { label, value } of documents) compare(value, label);
    for (const c of [...validCases(), ...invalidCases()]) compare(c.object, c.name);
    assert.ok(documents.length > 100, `${documents.length} documents`);
  });

  it('for seeded mutations of them', () => {
    const zonekeeper = bases.filter(
      (b) =>
        typeof b === 'object' &&
        b !== null &&
        (b as { apiVersion?: unknown }).apiVersion === 'dns.zonekeeper.dev/v1alpha1',
    );
    assert.ok(zonekeeper.length > 50, `${zonekeeper.length} Zonekeeper objects`);
    const before = { ...counts };
    for (let seed = 1; seed <= 6000; seed++) {
      const rng = prng(seed);
      const obj = structuredClone(pick(rng, zonekeeper)) as Record<string, unknown>;
      // None (a base as it is, for a share of accepted ones), one, or two changes.
      const n = Math.floor(rng() * 3);
      for (let i = 0; i < n; i++) mutate(rng, obj);
      compare(obj, `seed ${seed}`);
    }
    // Both answers are well represented.
    assert.ok(counts.accepted - before.accepted > 2000, `${counts.accepted - before.accepted} accepted`);
    assert.ok(counts.rejected - before.rejected > 4000, `${counts.rejected - before.rejected} rejected`);
  });

  it('on what the parse threads see most: record sets of the usual shape', () => {
    const rng = prng(42);
    for (let i = 0; i < 2000; i++) {
      const obj = exampleRecordSet();
      const spec = obj.spec as Record<string, unknown>;
      spec.type = pick(rng, ['A', 'AAAA', 'TXT', 'MX', 'CNAME', 'NS', 'SOA', 'SRV', 'a', 'PTR']);
      spec.name = pick(rng, ['www', '@', '*', '*.apps', 'a.b', 'WWW', 'x.example.com.', '']);
      spec.records = Array.from({ length: Math.floor(rng() * 3) }, () => pick(rng, SCALARS));
      if (rng() < 0.5) spec.ttl = pick(rng, [0, -1, 60, 2 ** 31, 2 ** 31 - 1, 1.5, '300', null]);
      if (rng() < 0.2) delete spec.zoneRef;
      compare(obj, `record set ${i}`);
    }
  });

  it('takes record sets of the usual shape without the clean copy, and only those acceptResource accepts', () => {
    const before = { ...usualCounts };
    const rng = prng(7);
    for (let i = 0; i < 3000; i++) {
      const obj = exampleRecordSet();
      const spec = obj.spec as Record<string, unknown>;
      const meta = obj.metadata as Record<string, unknown>;
      spec.type = pick(rng, ['A', 'A', 'A', 'AAAA', 'TXT', 'MX', 'CNAME', 'NS', 'SOA', 'a']);
      spec.name = pick(rng, ['www', 'www', '@', '*', '*.apps', 'x.example.com.', '', 'x'.repeat(256)]);
      spec.records = Array.from({ length: pick(rng, [0, 1, 1, 1, 1, 2, 2, 1001]) }, () =>
        rng() < 0.9
          ? pick(rng, ['192.0.2.1', '192.0.2.2', '10 mail'])
          : pick(rng, ['', 7, null, 'x'.repeat(65536)]),
      );
      if (rng() < 0.4) delete spec.ttl;
      else spec.ttl = pick(rng, [300, 300, -0, 0, 2 ** 31, 1.5, '300', null]);
      if (rng() < 0.1) delete meta.namespace;
      if (rng() < 0.1) meta.namespace = pick(rng, ['Dns', null, '', 'team-a']);
      if (rng() < 0.1) meta.name = pick(rng, ['Www', null, 'a.b', 'x'.repeat(254)]);
      if (rng() < 0.1)
        spec.zoneRef = pick(rng, [{ name: 'Zone' }, { name: 'z', namespace: 'dns' }, {}, null, 'z']);
      if (rng() < 0.1) setOwn(pick(rng, [obj, meta, spec]), pick(rng, KEYS), pick(rng, SCALARS));
      if (rng() < 0.1) spec.healthCheck = { type: 'TCP', port: 80 };
      if (rng() < 0.05) setOwn(obj, 'status', { observedGeneration: 1 });
      if (rng() < 0.05) obj.metadata = Object.assign(Object.create(null), meta);
      // The order a manifest writes the fields in does not matter to the clean copy.
      if (rng() < 0.2) obj.spec = Object.fromEntries(Object.entries(spec).reverse());
      compare(obj, `usual record set ${i}`);
    }
    // A good share takes it; the shape it declines, acceptResource makes elsewhere only from a
    // namespace-less, null-valued, reordered or status-bearing document (see `usualOf`).
    const taken = usualCounts.taken - before.taken;
    assert.ok(taken > 250, `${taken} taken, ${usualCounts.declinedUsual - before.declinedUsual} declined`);
  });

  it('a namespace or zone equal to the one accepted just before is accepted again; any other is checked', () => {
    // The usual checks keep the namespace and zone last accepted (`usualValues`): a value alike but
    // for a character, its case, its length or its type must still be checked, and refused.
    const namespaces: unknown[] = [
      'scale',
      'Scale',
      'scale',
      'scale-',
      'scal',
      'scale',
      '',
      'sc.le',
      'scale',
      null,
    ];
    namespaces.push('scale', 7, 'a'.repeat(63), 'a'.repeat(64), 'a'.repeat(63), 'scale ', 'scale');
    const zones: unknown[] = ['z1', 'Z1', 'z1', 'z1.', 'z1', '', 'z1', '.z1', 'z2', 'z1..b', 'z1.b', null];
    zones.push('z1', 1, 'a'.repeat(253), 'a'.repeat(254), 'a'.repeat(253), '-z1', 'z1', 'z_1', 'z1');
    let taken = 0;
    const before = usualCounts.taken;
    for (let i = 0; i < Math.max(namespaces.length, zones.length) * 2; i++) {
      const obj = exampleRecordSet();
      const namespace = namespaces[i % namespaces.length];
      const zone = zones[i % zones.length];
      (obj.metadata as Record<string, unknown>).namespace = namespace;
      (obj.spec as Record<string, unknown>).zoneRef = { name: zone };
      compare(obj, `namespace ${JSON.stringify(namespace)}, zone ${JSON.stringify(zone)}`);
      // And through the fields a text gives, against the full check of the same object.
      const fields = {
        name: (obj.metadata as Record<string, unknown>).name,
        namespace,
        zone,
        owner: (obj.spec as Record<string, unknown>).name,
        type: (obj.spec as Record<string, unknown>).type,
        ttl: (obj.spec as Record<string, unknown>).ttl,
        records: [...((obj.spec as Record<string, unknown>).records as unknown[])],
      };
      const usual = acceptUsualFields(7, fields);
      if (usual !== undefined) {
        taken++;
        const accepted = acceptResource(obj);
        assert.ok(accepted, `fields of namespace ${JSON.stringify(namespace)}, zone ${JSON.stringify(zone)}`);
        assert.deepStrictEqual(usual, usualOf(accepted as unknown as Record<string, unknown>));
      }
    }
    assert.ok(taken > 5 && usualCounts.taken - before > 5, `${taken} taken`);
  });

  it('reads -0 as 0, and leaves a list with a hole to the full check', () => {
    const obj = exampleRecordSet();
    (obj.metadata as Record<string, unknown>).generation = -0;
    const accepted = acceptResource(obj);
    assert.ok(accepted);
    assert.ok(Object.is(accepted.metadata.generation, 0));
    compare(obj, '-0');
    const holes = exampleRecordSet();
    // biome-ignore lint/suspicious/noSparseArray: a hole, which only a caller in code can make
    (holes.spec as Record<string, unknown>).records = [, '192.0.2.1'];
    // The full check skips a hole (never made by YAML or JSON); the compiled one declines the object.
    assert.equal(acceptResource(holes), undefined);
    assert.deepStrictEqual(validateResource(holes), checkResource(holes));
  });

  it('on metadata with fields of its prototype (made in code, never by YAML or JSON)', () => {
    // A field inherited and enumerable: a namespace a cluster-scoped kind must not have.
    const inherited = exampleZoneClass();
    inherited.metadata = Object.assign(Object.create({ namespace: 'dns' }), { name: 'builtin' });
    compare(inherited, 'an inherited namespace');
    assert.equal(acceptResource(inherited), undefined);
    // A field behind a getter of another prototype, which for-in does not list.
    class Meta {
      namespace = 'dns';
      get name(): string {
        return 'www';
      }
    }
    const getter = exampleRecordSet();
    getter.metadata = new Meta() as unknown as Record<string, unknown>;
    compare(getter, 'a name behind a getter');
    assert.ok(acceptResource(getter));
    // No prototype at all.
    const bare = exampleRecordSet();
    bare.metadata = Object.assign(Object.create(null), bare.metadata as object);
    compare(bare, 'metadata without a prototype');
    assert.ok(acceptResource(bare));
  });
});
