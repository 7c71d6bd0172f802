/**
 * The record writer's gate: a write is admitted only where the zone would serve it. Names at or below
 * a delegation inside the zone (an NS record set) are refused up front, by the rule assembleZone
 * judges record sets by (cutRefusal), not stored to be judged occluded later.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { gatedWriter } from '../../../test/support/gated-writer.ts';
import type { DNSRecordSet, DNSZone, DNSZoneClass } from '../../api/index.ts';
import { API_VERSION } from '../../api/meta.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import { CredentialTable, validateWriteAccess } from '../../writes/credentials.ts';
import { WriteCoordinator } from '../../writes/record-writer.ts';
import { WriteError } from '../../writes/write-request.ts';
import { assembleZone } from '../../zones/assemble.ts';
import { Catalog } from '../../zones/catalog.ts';
import { catalogGate } from './catalog-gate.ts';
import { FolderWriteStore } from './folder-write-store.ts';

const zoneClass: DNSZoneClass = {
  apiVersion: API_VERSION,
  kind: 'DNSZoneClass',
  metadata: { name: 'builtin', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { backend: { builtin: {} }, nameServers: ['ns1.example.com.'] },
};
const zone: DNSZone = {
  apiVersion: API_VERSION,
  kind: 'DNSZone',
  metadata: { name: 'example', namespace: 'dns', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: {
    domainName: 'example.com',
    className: 'builtin',
    delegations: [{ namespaces: ['lab'], names: ['*.lab'] }],
  },
};
const recordSet = (
  name: string,
  type: RecordTypeName,
  records: string[],
  at = '2026-01-02T00:00:00Z',
): DNSRecordSet => ({
  apiVersion: API_VERSION,
  kind: 'DNSRecordSet',
  metadata: {
    name: `${name.replaceAll('.', '-')}-${type.toLowerCase()}`,
    namespace: 'lab',
    generation: 1,
    creationTimestamp: at,
  },
  spec: { name, type, records },
});
// A delegation inside the zone, with an in-bailiwick nameserver (its glue is served).
const cut = recordSet('deleg.lab.example.com.', 'NS', ['ns1.deleg.lab.example.com.', 'ns.elsewhere.net.']);

function setup(): { catalog: Catalog; store: MemoryStore } {
  const catalog = new Catalog();
  catalog.load([zoneClass], [zone], [cut]);
  return { catalog, store: new MemoryStore() };
}

describe('catalog gate', () => {
  test('refuses a write at or below an NS cut, as assembleZone would judge it, and says what to fix', () => {
    const { catalog, store } = setup();
    const gate = catalogGate(catalog, store);
    const cases: [string, RecordTypeName, boolean][] = [
      ['www.deleg.lab.example.com.', 'A', false],
      ['_acme-challenge.deleg.lab.example.com.', 'TXT', false],
      ['a.b.deleg.lab.example.com.', 'AAAA', false],
      ['deleg.lab.example.com.', 'TXT', false],
      ['deleg.lab.example.com.', 'A', false],
      // Glue for the cut's nameserver, the DS at the cut, the NS at the cut itself: served.
      ['ns1.deleg.lab.example.com.', 'A', true],
      ['ns1.deleg.lab.example.com.', 'TXT', false],
      ['deleg.lab.example.com.', 'DS', true],
      ['deleg.lab.example.com.', 'NS', true],
      // A deeper NS below the cut is occluded as well.
      ['sub.deleg.lab.example.com.', 'NS', false],
      ['www.lab.example.com.', 'A', true],
      ['other.lab.example.com.', 'TXT', true],
    ];
    for (const [name, type, ok] of cases) {
      const admitted = gate.admit('lab', name, type);
      assert.equal(admitted.ok, ok, `${name} ${type}`);
      // The same verdict as the zone's assembly gives a record set written there.
      const rs = recordSet(
        name,
        type,
        type === 'DS'
          ? ['1 13 2 ' + 'ab'.repeat(32)]
          : type === 'NS'
            ? ['ns9.elsewhere.net.']
            : type === 'TXT'
              ? ['"x"']
              : type === 'AAAA'
                ? ['2001:db8::1']
                : ['192.0.2.1'],
        '2026-01-03T00:00:00Z',
      );
      const assembled = assembleZone({
        zone,
        zoneClass,
        origin: 'example.com.',
        records: [
          { recordSet: cut, fqdn: 'deleg.lab.example.com.' },
          { recordSet: rs, fqdn: name },
        ],
        children: [],
      });
      const verdict = assembled.verdicts.get(`lab/${rs.metadata.name}`);
      if (!(type === 'NS' && name === 'deleg.lab.example.com.'))
        assert.equal(verdict?.accepted, ok, `${name} ${type}: ${JSON.stringify(verdict)}`);
      if (!admitted.ok) {
        assert.match(admitted.message, /delegat/);
        assert.match(admitted.message, /write (it|\w+) in the delegated zone/);
      }
    }
    const below = gate.admit('lab', 'www.deleg.lab.example.com.', 'A');
    assert.ok(!below.ok);
    assert.match(below.message, /below the delegation deleg\.lab\.example\.com\./);
  });

  test('an NS record set that is itself occluded makes no cut; an unparsable one neither', () => {
    const { catalog, store } = setup();
    catalog.setRecord(recordSet('deep.other.lab.example.com.', 'NS', ['not a name!']));
    const gate = catalogGate(catalog, store);
    assert.ok(gate.admit('lab', 'www.deep.other.lab.example.com.', 'A').ok);
  });

  test('the record writer refuses such a write with NOT_DELEGATED and stores nothing; a delete still goes through', async () => {
    const { catalog, store } = setup();
    const dir = await mkdtemp(path.join(tmpdir(), 'zk-gate-'));
    const writes = await FolderWriteStore.open(dir, store);
    try {
      const access = validateWriteAccess({
        credentials: [{ name: 'lab-a', kind: 'api-key', namespace: 'lab', secretRef: { env: 'LAB_A' } }],
      });
      assert.ok(access.ok);
      const writer = new WriteCoordinator({
        store: writes,
        gate: catalogGate(catalog, store),
        credentials: new CredentialTable(access.config),
      });
      await writer.start();
      await assert.rejects(
        writer.apply('lab-a', {
          changes: [{ op: 'upsert', name: 'www.deleg.lab.example.com.', type: 'A', records: ['192.0.2.1'] }],
        }),
        (e) => e instanceof WriteError && e.code === 'NOT_DELEGATED' && /delegated zone/.test(e.message),
      );
      assert.equal(store.list('DNSRecordSet').length, 0);
      const deleted = await writer.apply('lab-a', {
        changes: [{ op: 'delete', name: 'www.deleg.lab.example.com.', type: 'A' }],
      });
      assert.deepEqual(
        deleted.changes.map((c) => c.outcome),
        ['absent'],
      );
    } finally {
      await writes.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('follows the catalog: a cut added, moved, retyped and deleted; the zone is never walked', () => {
    const { catalog, store } = setup();
    const gate = catalogGate(catalog, store);
    // A write's cost is the name's depth: the zone's members are not listed for it.
    catalog.zoneMembers = () => assert.fail('admit listed the zone');
    const below = (name: string) => gate.admit('lab', name, 'TXT').ok === false;
    assert.ok(below('x.deleg.lab.example.com.'));
    const moved = { ...cut, spec: { ...cut.spec, name: 'other.lab.example.com.' } };
    catalog.setRecord(moved);
    assert.ok(!below('x.deleg.lab.example.com.'));
    assert.ok(below('x.other.lab.example.com.'));
    catalog.setRecord({ ...moved, spec: { ...moved.spec, type: 'TXT', records: ['"t"'] } });
    assert.ok(!below('x.other.lab.example.com.'));
    catalog.setRecord(moved);
    assert.ok(below('x.other.lab.example.com.'));
    catalog.deleteRecord(`lab/${cut.metadata.name}`);
    assert.ok(!below('x.other.lab.example.com.'));
  });
});

describe("catalog gate: a hostile tenant's view of refusals", () => {
  const victim = 'victim-ns-zz';
  function world(): Catalog {
    const c = new Catalog();
    c.load(
      [zoneClass],
      [
        {
          ...zone,
          metadata: { ...zone.metadata, name: 'secret-zone-zz', namespace: victim },
          spec: { domainName: 'victim.test', className: 'builtin' },
        },
        {
          ...zone,
          metadata: { ...zone.metadata, name: 'mine', namespace: 'lab' },
          spec: {
            domainName: 't.test',
            className: 'builtin',
            delegations: [{ namespaces: [victim], names: ['kid', 'deep.mid'], types: ['NS'] }],
          },
        },
        {
          ...zone,
          metadata: {
            ...zone.metadata,
            name: 'secret-kid-zz',
            namespace: victim,
            creationTimestamp: '2026-01-01T00:00:01Z',
          },
          spec: { domainName: 'kid.t.test', className: 'builtin' },
        },
        {
          ...zone,
          metadata: {
            ...zone.metadata,
            name: 'secret-deep-zz',
            namespace: victim,
            creationTimestamp: '2026-01-01T00:00:01Z',
          },
          spec: { domainName: 'deep.mid.t.test', className: 'builtin' },
        },
      ],
      [],
    );
    return c;
  }

  test('each refusal the catalog gives a write is told without the other namespace, whole in the detail', () => {
    const gate = catalogGate(world(), new MemoryStore());
    const cases: [string, RecordTypeName, string, RegExp][] = [
      [
        'x.victim.test.',
        'A',
        'zone victim.test. does not delegate x A to namespace lab; its owners can add a delegation {namespaces: [lab], names: [x], types: [A]}',
        /\(DNSZone victim-ns-zz\/secret-zone-zz\)/,
      ],
      [
        'kid.t.test.',
        'DS',
        'the DS record set at kid.t.test. is published in zone t.test. but belongs to zone kid.t.test. of another ' +
          "namespace (RFC 4035 §2.4): only a DNSRecordSet of that zone's namespace may publish it",
        /\(DNSZone victim-ns-zz\/secret-kid-zz\) of namespace victim-ns-zz .*: only a DNSRecordSet of namespace victim-ns-zz may publish it; create it there$/,
      ],
      [
        'mid.t.test.',
        'NS',
        'an NS record set at mid.t.test. would delegate it away from zone t.test. and hide zone deep.mid.t.test., ' +
          "which is served below it (RFC 1034 §4.2.1: a zone cut ends the parent's authority for every name below it); " +
          'delete this record set: zone deep.mid.t.test. is delegated by its DNSZone',
        /hide zone deep\.mid\.t\.test\. \(DNSZone victim-ns-zz\/secret-deep-zz\)/,
      ],
      [
        'mid.t.test.',
        'CNAME',
        'a CNAME at mid.t.test. would alias a name above zone deep.mid.t.test., which is served below it: a CNAME ' +
          'owner has no other data and no names below it (RFC 1034 §3.6.2), and resolvers that minimise their queries ' +
          '(RFC 9156) would follow the alias instead of reaching that zone; delete this record set',
        /above zone deep\.mid\.t\.test\. \(DNSZone victim-ns-zz\/secret-deep-zz\)/,
      ],
      [
        'www.nowhere.test.',
        'A',
        'no served DNSZone contains www.nowhere.test.; create the zone or fix spec.name',
        /^no served DNSZone contains www\.nowhere\.test\./,
      ],
    ];
    for (const [name, type, told, detail] of cases) {
      const admitted = gate.admit('lab', name, type);
      assert.ok(!admitted.ok, `${name} ${type}`);
      assert.equal(admitted.message, told);
      assert.match(admitted.detail ?? '', detail);
      assert.doesNotMatch(admitted.message, /victim-ns-zz|secret-/);
    }
  });
});

describe('CNAME and ALIAS exclusivity (RFC 1034 §3.6.2): a write the zone would judge the loser is refused', () => {
  const credentials = {
    get: (name: string) =>
      name === 'lab-a' ? { name, kind: 'api-key' as const, namespace: 'lab' } : undefined,
    quota: () => ({ maxRecordSets: 100, requestsPerSecond: 1000, burst: 1000 }),
  };
  // The zone's namespace defines these by manifest, older than anything written through the API.
  const manifest = (name: string, type: RecordTypeName, records: string[]): DNSRecordSet => ({
    apiVersion: API_VERSION,
    kind: 'DNSRecordSet',
    metadata: {
      name: `m-${name.split('.')[0]}-${type.toLowerCase()}`,
      namespace: 'dns',
      generation: 1,
      creationTimestamp: '2026-01-02T00:00:00Z',
    },
    spec: { name, type, records },
  });
  const records = [
    manifest('alias.lab.example.com.', 'CNAME', ['target.example.net.']),
    manifest('data.lab.example.com.', 'TXT', ['"v=spf1 -all"']),
    manifest('apexlike.lab.example.com.', 'ALIAS', ['lb.example.net.']),
    manifest('addr.lab.example.com.', 'A', ['192.0.2.9']),
  ];
  const up = (name: string, type: RecordTypeName, values: string[]) => ({
    op: 'upsert' as const,
    name,
    type,
    records: values,
  });
  const refusedWith = (code: string, also?: RegExp) => (e: unknown) => {
    assert.ok(e instanceof WriteError, String(e));
    assert.equal(e.code, code, e.message);
    if (also) assert.match(e.message, also);
    // Another namespace's object is never named to the caller.
    assert.doesNotMatch(e.message, /dns\/|m-alias|m-data|m-apexlike|m-addr/);
    return true;
  };

  test('other data at an older CNAME, a CNAME at older data, A/AAAA at an older ALIAS and an ALIAS at an older A: refused, nothing stored; each as assembly judges it', async () => {
    const w = await gatedWriter({ classes: [zoneClass], zones: [zone], records, credentials });
    try {
      const cases: [string, RecordTypeName, string[], string][] = [
        ['alias.lab.example.com.', 'A', ['192.0.2.1'], 'CNAME'],
        ['alias.lab.example.com.', 'TXT', ['"t"'], 'CNAME'],
        ['data.lab.example.com.', 'CNAME', ['x.example.net.'], 'TXT'],
        ['apexlike.lab.example.com.', 'A', ['192.0.2.1'], 'ALIAS'],
        ['apexlike.lab.example.com.', 'AAAA', ['2001:db8::1'], 'ALIAS'],
        ['addr.lab.example.com.', 'ALIAS', ['lb.example.net.'], 'A'],
      ];
      for (const [name, type, values, holds] of cases) {
        await assert.rejects(
          w.writer.apply('lab-a', { changes: [up(name, type, values)] }),
          refusedWith(
            'NAME_CONFLICT',
            new RegExp(
              `cannot coexist with the ${holds} published by a DNSRecordSet of another namespace.*RFC 1034 §3.6.2|cannot coexist with the ${holds}.*another name`,
            ),
          ),
          `${name} ${type}`,
        );
        // What the zone would make of that record set, written: it loses (never served).
        const written = recordSet(name, type, values, '2026-03-01T00:00:00Z');
        const assembled = assembleZone({
          zone,
          zoneClass,
          origin: 'example.com.',
          records: [...records, written].map((r) => ({ recordSet: r, fqdn: r.spec.name })),
          children: [],
        });
        const verdict = assembled.verdicts.get(`lab/${written.metadata.name}`);
        assert.equal(verdict?.accepted, false, `${name} ${type}`);
      }
      assert.equal(w.store.list('DNSRecordSet').length, 0);
      // Beside them, what may coexist is written: an MX at the TXT's name, a TXT at the ALIAS's.
      const ok = await w.writer.apply('lab-a', {
        changes: [
          up('data.lab.example.com.', 'MX', ['10 mail.example.net.']),
          up('apexlike.lab.example.com.', 'TXT', ['"t"']),
        ],
      });
      assert.deepEqual(
        ok.changes.map((c) => c.outcome),
        ['created', 'created'],
      );
    } finally {
      await w.close();
    }
  });

  test("the caller's own records: replaceable, and its own older record set wins over a newer manifest", async () => {
    const w = await gatedWriter({ classes: [zoneClass], zones: [zone], credentials });
    try {
      const cname = await w.writer.apply('lab-a', {
        changes: [up('own.lab.example.com.', 'CNAME', ['a.example.net.'])],
      });
      assert.equal(cname.changes[0]?.outcome, 'created');
      // Replacing one's own CNAME is no conflict with itself.
      const again = await w.writer.apply('lab-a', {
        changes: [up('own.lab.example.com.', 'CNAME', ['b.example.net.'])],
      });
      assert.equal(again.changes[0]?.outcome, 'updated');
      // Other data at one's own CNAME: refused, and the message names the caller's own object.
      await assert.rejects(
        w.writer.apply('lab-a', { changes: [up('own.lab.example.com.', 'TXT', ['"t"'])] }),
        refusedWith('NAME_CONFLICT', /the CNAME published by DNSRecordSet lab\/own-lab-example-com-cname-/),
      );
      // Deleting the CNAME and writing data in its place, in one request: fine.
      const swapped = await w.writer.apply('lab-a', {
        changes: [
          { op: 'delete', name: 'own.lab.example.com.', type: 'CNAME' },
          up('own.lab.example.com.', 'A', ['192.0.2.1']),
        ],
      });
      assert.deepEqual(
        swapped.changes.map((c) => c.outcome),
        ['deleted', 'created'],
      );
      // A manifest CNAME added later, at the name of the caller's older A: the A keeps winning, so the
      // caller still changes it.
      w.store.apply(
        manifest('own.lab.example.com.', 'CNAME', ['late.example.net.']),
        '2026-12-31T00:00:00.000Z',
      );
      const updated = await w.writer.apply('lab-a', {
        changes: [up('own.lab.example.com.', 'A', ['192.0.2.2'])],
      });
      assert.equal(updated.changes[0]?.outcome, 'updated');
    } finally {
      await w.close();
    }
  });

  test("within one request, and before the zone's reconcile has taken the writer's last request", async () => {
    const w = await gatedWriter({ classes: [zoneClass], zones: [zone], credentials });
    try {
      // Two new record sets of one request at one name: the zone would keep one (the older, by key).
      await assert.rejects(
        w.writer.apply('lab-a', {
          changes: [
            up('pair.lab.example.com.', 'A', ['192.0.2.1']),
            up('pair.lab.example.com.', 'CNAME', ['x.example.net.']),
          ],
        }),
        (e) => e instanceof WriteError && e.code === 'NAME_CONFLICT' && e.change === 1,
      );
      assert.equal(w.store.list('DNSRecordSet').length, 0);
      // The zone's model lags behind the writer: what the writer holds counts all the same.
      w.freeze();
      await w.writer.apply('lab-a', { changes: [up('lag.lab.example.com.', 'CNAME', ['x.example.net.'])] });
      await assert.rejects(
        w.writer.apply('lab-a', { changes: [up('lag.lab.example.com.', 'TXT', ['"t"'])] }),
        refusedWith('NAME_CONFLICT'),
      );
      w.thaw();
    } finally {
      await w.close();
    }
  });

  test('hostile tenant: learns nothing of a CNAME at a name it may not write, and evicts no older owner', async () => {
    const outside: DNSRecordSet = manifest('www.example.com.', 'CNAME', ['target.example.net.']);
    const w = await gatedWriter({
      classes: [zoneClass],
      zones: [zone],
      records: [...records, outside],
      credentials,
    });
    try {
      // Outside its delegation: the same refusal whether or not a CNAME is there.
      const at = async (name: string) => {
        try {
          await w.writer.apply('lab-a', { changes: [up(name, 'TXT', ['"x"'])] });
        } catch (e) {
          assert.ok(e instanceof WriteError);
          return `${e.code} ${e.message.replaceAll(name, 'NAME').replaceAll(name.split('.')[0]!, 'LABEL')}`;
        }
        return 'written';
      };
      const withCname = await at('www.example.com.');
      const without = await at('nothing.example.com.');
      assert.match(withCname, /^NOT_DELEGATED /);
      assert.equal(withCname, without);
      // Inside it, a newer write never takes the name from the older CNAME: refused, and the zone
      // still serves the CNAME alone.
      await assert.rejects(
        w.writer.apply('lab-a', { changes: [up('alias.lab.example.com.', 'A', ['192.0.2.66'])] }),
        refusedWith('NAME_CONFLICT'),
      );
      const served = w.model('dns/example')!.publishedAt('alias.lab.example.com.');
      assert.deepEqual(
        served.map((r) => r.type),
        ['CNAME'],
      );
    } finally {
      await w.close();
    }
  });
});
