import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Rdata } from '../../../dns/rdata.ts';
import type { SelectionQuery } from '../policy.ts';
import { SelectionPolicies } from '../registry.ts';
import { HEALTH_DOWN, HEALTH_UP, HealthView, NO_SLOT } from './health-view.ts';
import { type SteeringBindingData, steeringPolicies } from './policies.ts';

const A = (address: string): Rdata => ({ type: 'A', address }) as Rdata;
const CANDIDATES = ['192.0.2.10', '198.51.100.10', '203.0.113.10'];
const rrset = { owner: 'api.example.com.', type: 1, ttl: 30, rdata: CANDIDATES.map(A) };

function setup(data: Partial<SteeringBindingData> = {}) {
  const view = new HealthView(new SharedArrayBuffer(64));
  const registry = new SelectionPolicies(steeringPolicies(view));
  const full: SteeringBindingData = { candidates: CANDIDATES, slots: [0, 1, 2], whenAllDown: 'All', ...data };
  const run = (name: string, q: Partial<SelectionQuery> = {}) => {
    const policy = registry.get(name)!;
    const selection = policy.select(rrset as never, policy.prepare(full), {
      qname: 'api.example.com.',
      qtype: 1,
      zone: 'example.com.',
      client: '192.0.2.200',
      clientSubnet: undefined,
      ...q,
    });
    if (selection === 'all' || selection === 'none') return selection;
    return {
      addresses: selection.rdata.map((r) => (r as { address: string }).address),
      scope: selection.scope ?? 0,
    };
  };
  return { view, run };
}

const subnet = (octets: number[], sourcePrefix: number) => ({
  clientSubnet: { family: 1 as const, sourcePrefix, scopePrefix: 0, address: Uint8Array.from(octets) },
});

describe('steering policies', () => {
  test('All answers the healthy records; unknown counts as up', () => {
    const { view, run } = setup();
    assert.deepEqual(run('all'), { addresses: CANDIDATES, scope: 0 });
    view.set(1, HEALTH_DOWN);
    assert.deepEqual(run('all'), { addresses: ['192.0.2.10', '203.0.113.10'], scope: 0 });
  });

  test('Ordered answers the first healthy record in the order of records', () => {
    const { view, run } = setup();
    view.set(0, HEALTH_UP);
    assert.deepEqual(run('ordered'), { addresses: ['192.0.2.10'], scope: 0 });
    view.set(0, HEALTH_DOWN);
    assert.deepEqual(run('ordered'), { addresses: ['198.51.100.10'], scope: 0 });
    view.set(1, HEALTH_DOWN);
    assert.deepEqual(run('ordered'), { addresses: ['203.0.113.10'], scope: 0 });
    view.set(0, HEALTH_UP);
    assert.deepEqual(run('ordered'), { addresses: ['192.0.2.10'], scope: 0 });
  });

  test('whenAllDown: All answers everything, First the first record, None leaves the RRset out', () => {
    for (const [whenAllDown, expected] of [
      ['All', 'all'],
      ['First', { addresses: ['192.0.2.10'], scope: 0 }],
      ['None', 'none'],
    ] as const) {
      const { view, run } = setup({ whenAllDown });
      for (const slot of [0, 1, 2]) view.set(slot, HEALTH_DOWN);
      assert.deepEqual(run('ordered'), expected, whenAllDown);
    }
  });

  test('a candidate without a health check is always up', () => {
    const { view, run } = setup({ slots: [0, NO_SLOT, 2] });
    for (const slot of [0, 1, 2]) view.set(slot, HEALTH_DOWN);
    assert.deepEqual(run('all'), { addresses: ['198.51.100.10'], scope: 0 });
  });

  test('Weighted is sticky per client, follows the weights, skips down records, scope = source prefix', () => {
    const { view, run } = setup({ weights: [80, 20, 0] });
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const q = { client: `10.${(i >> 8) & 255}.${i & 255}.1` };
      const first = run('weighted', q);
      assert.deepEqual(run('weighted', q), first, 'the same client gets the same answer');
      const a = (first as { addresses: string[] }).addresses[0]!;
      counts.set(a, (counts.get(a) ?? 0) + 1);
    }
    assert.equal(counts.get('203.0.113.10'), undefined, 'weight 0 is never chosen');
    const heavy = counts.get('192.0.2.10') ?? 0;
    assert.ok(heavy > 1400 && heavy < 1800, `80% of 2000 clients, got ${heavy}`);
    assert.equal((run('weighted', subnet([198, 51, 100], 24)) as { scope: number }).scope, 24);
    view.set(0, HEALTH_DOWN);
    for (let i = 0; i < 50; i++)
      assert.deepEqual((run('weighted', { client: `10.0.${i}.1` }) as { addresses: string[] }).addresses, [
        '198.51.100.10',
      ]);
  });

  test('Weighted and Hashed move only the clients of a record that goes down, and back when it returns', () => {
    for (const name of ['weighted', 'hashed']) {
      const { view, run } = setup({ weights: [50, 30, 20] });
      const clients = Array.from({ length: 300 }, (_, i) => ({ client: `10.1.${i >> 8}.${i & 255}` }));
      const pick = (q: { client: string }) => (run(name, q) as { addresses: string[] }).addresses[0]!;
      const before = clients.map(pick);
      view.set(1, HEALTH_DOWN);
      const during = clients.map(pick);
      clients.forEach((_, i) => {
        if (before[i] !== '198.51.100.10')
          assert.equal(during[i], before[i], `${name}: client ${i} kept its record`);
        else assert.notEqual(during[i], '198.51.100.10');
      });
      view.set(1, HEALTH_UP);
      assert.deepEqual(clients.map(pick), before, `${name}: every client back on its record`);
    }
  });

  test('Hashed gives one record per client, the same one each time', () => {
    const { run } = setup();
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const q = subnet([10, i, 0], 24);
      const first = run('hashed', q) as { addresses: string[]; scope: number };
      assert.equal(first.addresses.length, 1);
      assert.equal(first.scope, 24);
      assert.deepEqual(run('hashed', q), first);
      seen.add(first.addresses[0]!);
    }
    assert.equal(seen.size, 3, 'clients spread over every record');
  });

  test('Closest: the nearest region with a healthy record, scope = the topology network', () => {
    const { view, run } = setup({
      regions: ['eu', 'us', 'ap'],
      topology: [
        { network: '198.51.100.0/24', regions: ['us', 'eu'] },
        { network: '198.51.0.0/16', regions: ['ap'] },
        { network: '10.0.0.0/8', regions: ['eu', 'us'] },
      ],
    });
    assert.deepEqual(run('closest', subnet([198, 51, 100], 24)), { addresses: ['198.51.100.10'], scope: 24 });
    assert.deepEqual(run('closest', subnet([198, 51, 7], 24)), { addresses: ['203.0.113.10'], scope: 16 });
    assert.deepEqual(run('closest', { client: '10.1.2.3' }), { addresses: ['192.0.2.10'], scope: 8 });
    view.set(1, HEALTH_DOWN);
    assert.deepEqual(run('closest', subnet([198, 51, 100], 24)), { addresses: ['192.0.2.10'], scope: 24 });
    // Outside every topology network: every healthy record, for the client's own prefix.
    assert.deepEqual(run('closest', subnet([172, 16, 0], 24)), {
      addresses: ['192.0.2.10', '203.0.113.10'],
      scope: 24,
    });
  });

  test('Random answers one healthy record', () => {
    const { view, run } = setup();
    view.set(0, HEALTH_DOWN);
    view.set(2, HEALTH_DOWN);
    for (let i = 0; i < 20; i++) assert.deepEqual(run('random'), { addresses: ['198.51.100.10'], scope: 0 });
  });

  test('prepare refuses data without a slot per candidate', () => {
    const registry = new SelectionPolicies(steeringPolicies(new HealthView(new SharedArrayBuffer(16))));
    assert.throws(() => registry.get('all')!.prepare({ candidates: ['192.0.2.1'], slots: [] }), {
      code: 'STEERING_DATA',
    });
  });
});

describe('Closest with a GeoIP database', () => {
  test('country, else continent, gives the regions; scope = the database network; topology first', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const { writeMmdb } = await import('../../../../test/support/mmdb-writer.ts');
    const dir = await mkdtemp(path.join(tmpdir(), 'zonekeeper-geo-'));
    const databaseFile = path.join(dir, 'geo.mmdb');
    await writeFile(
      databaseFile,
      writeMmdb([
        { network: '192.0.2.0/24', record: { country: { iso_code: 'DE' }, continent: { code: 'EU' } } },
        { network: '100.64.0.0/10', record: { country: { iso_code: 'CA' }, continent: { code: 'NA' } } },
      ]),
    );
    const { run } = setup({
      regions: ['eu', 'us', 'ap'],
      topology: [{ network: '192.0.2.128/25', regions: ['ap'] }],
      geoip: { databaseFile, countries: { DE: ['eu'] }, continents: { NA: ['us'] } },
    });
    assert.deepEqual(run('closest', subnet([192, 0, 2], 24)), { addresses: ['192.0.2.10'], scope: 24 });
    assert.deepEqual(run('closest', { client: '100.70.1.1' }), { addresses: ['198.51.100.10'], scope: 10 });
    assert.deepEqual(run('closest', { client: '192.0.2.200' }), { addresses: ['203.0.113.10'], scope: 25 });
    assert.deepEqual(
      run('closest', subnet([10, 1, 0], 24)),
      { addresses: CANDIDATES, scope: 24 },
      'in no network: every record',
    );
  });

  test('an unreadable database refuses the binding with a stable code', () => {
    const registry = new SelectionPolicies(steeringPolicies(new HealthView(new SharedArrayBuffer(16))));
    assert.throws(
      () =>
        registry.get('closest')!.prepare({
          candidates: ['192.0.2.1'],
          slots: [-1],
          whenAllDown: 'All',
          geoip: { databaseFile: '/nonexistent/geo.mmdb' },
        }),
      { code: 'STEERING_GEOIP' },
    );
  });
});
