/**
 * The RFC 2136 backend against real knotd and named (UPDATE-accepting primaries with TSIG), beyond the
 * contract kit: a concurrent hand-made nsupdate during an apply (detected by the prerequisites, read
 * and planned again, nothing lost, the hand-made RRset untouched), changes split into several
 * messages, and what a writer or a misconfiguration must not be able to do: a wrong key, a key not
 * allowed to update, a server down, a zone the server does not serve, hand-made RRsets, and a
 * tampered ownership record.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kind, Resource } from '../src/api/index.ts';
import { BackendError, type ProgrammedZone, readBack } from '../src/backends/backend.ts';
import { BuiltinBackend } from '../src/backends/builtin/builtin-backend.ts';
import { rrset } from '../src/backends/contract/kit.ts';
import { type BackendFactory, createBackendFactory } from '../src/backends/registry.ts';
import { ownershipName } from '../src/backends/rfc2136/plan.ts';
import {
  type ApplyStats,
  Rfc2136Backend,
  type Rfc2136BackendOptions,
} from '../src/backends/rfc2136/rfc2136-backend.ts';
import { Controller } from '../src/control/controller.ts';
import { MemoryStore } from '../src/control/memory-store.ts';
import { fileAndEnvSecrets } from '../src/control/secrets.ts';
import { MemorySerialStore } from '../src/control/serial-store.ts';
import { nameEquals, nameKey } from '../src/dns/name.ts';
import { printRdata, type Rdata } from '../src/dns/rdata.ts';
import { typeName } from '../src/dns/rrtype.ts';
import { parseTsigKey } from '../src/dns/tsig.ts';
import { axfr } from '../src/server/transfer/axfr-client.ts';
import { ZoneTable } from '../src/server/zone-table.ts';
import type { RRset } from '../src/zones/rrset.ts';
import { recordSet, zone, zoneClass } from './support/resources.ts';
import {
  type KeyConfig,
  newKey,
  startUpdatePrimary,
  type UpdatePrimary,
} from './support/update-primaries.ts';
import { waitFor } from './support/zonekeeper-process.ts';

const ZONES = Array.from({ length: 12 }, (_, i) => `h${i + 1}.hostile.example.`);

const SOA = {
  ttl: 300,
  mname: 'ns1.contract.example.',
  rname: 'hostmaster.contract.example.',
  refresh: 3600,
  retry: 600,
  expire: 604800,
  minimum: 300,
};

function zoneOf(origin: string, serial: number, rrsets: RRset[]): ProgrammedZone {
  return { key: `hostile/${origin}`, origin, soa: SOA, serial, rrsets: () => rrsets };
}

const base = (origin: string): RRset[] => [
  rrset(origin, '@', 'NS', ['ns1.contract.example.', 'ns2.contract.example.']),
  rrset(origin, 'www', 'A', ['192.0.2.10', '192.0.2.11']),
  rrset(origin, '@', 'TXT', ['"v=spf1 -all"']),
  rrset(origin, 'docs', 'CNAME', ['www.contract.example.']),
];

for (const kind of ['knot', 'bind'] as const) {
  describe(`rfc2136 backend against ${kind === 'knot' ? 'knotd' : 'named'}: concurrency and hostile cases`, () => {
    let primary: UpdatePrimary;
    const updateKey = newKey('zonekeeper-update');
    const transferKey = newKey('transfer-only');
    const handKey = newKey('by-hand');
    let zones = 0;
    const newOrigin = () => ZONES[zones++]!;

    const backendWith = (
      keys: { tsigKey?: KeyConfig; transferKey?: KeyConfig; secret?: string } = {},
      extra: Partial<Rfc2136BackendOptions> = {},
    ) => {
      const key = keys.tsigKey ?? updateKey;
      return new Rfc2136Backend({
        settings: {
          server: '127.0.0.1',
          port: primary.port,
          tsigKey: { name: key.name, algorithm: key.algorithm, secretRef: { env: 'ZK_KEY' } },
          ...(keys.transferKey
            ? {
                transferKey: {
                  name: keys.transferKey.name,
                  algorithm: keys.transferKey.algorithm,
                  secretRef: { env: 'ZK_XFR_KEY' },
                },
              }
            : {}),
          timeoutSeconds: 3,
        },
        secrets: fileAndEnvSecrets({
          ZK_KEY: keys.secret ?? key.secret,
          ZK_XFR_KEY: keys.transferKey?.secret ?? '',
        }),
        ...extra,
      });
    };

    /** Every RRset the server holds, by AXFR with the transfer-only key: `owner TYPE` → sorted records. */
    async function held(origin: string): Promise<Map<string, string[]>> {
      const { records } = await axfr({
        host: '127.0.0.1',
        port: primary.port,
        zone: origin,
        key: parseTsigKey(transferKey),
        timeoutMs: 5000,
        maxRecords: 100_000,
      });
      const out = new Map<string, string[]>();
      for (const r of records) {
        const k = `${nameKey(r.name)} ${typeName(r.type)}`;
        out.set(k, [...(out.get(k) ?? []), printRdata(r.data as Rdata)].sort());
      }
      return out;
    }

    before(async () => {
      primary = await startUpdatePrimary({ kind, zones: ZONES, updateKey, transferKey, handKey });
    });
    after(async () => {
      await primary?.close();
    });

    test('a concurrent nsupdate during an apply is detected by the prerequisites, re-read and re-planned; the hand-made RRset is untouched', async () => {
      const origin = newOrigin();
      const stats: ApplyStats[] = [];
      let raced = false;
      let armed = false;
      const backend = backendWith(
        {},
        {
          onApply: (_o, s) => stats.push(s),
          beforeSend: async (o, attempt) => {
            if (!armed || raced || attempt !== 1 || !nameEquals(o, origin)) return;
            raced = true;
            // Between the backend's read and its UPDATE: a person takes a name the zone now wants,
            // and edits an RRset Zonekeeper owns.
            await primary.nsupdate(origin, [
              `update add race.${origin} 300 A 198.51.100.1`,
              `update delete www.${origin} A`,
              `update add www.${origin} 300 A 203.0.113.5`,
            ]);
          },
        },
      );
      const v1 = base(origin);
      assert.deepEqual((await backend.applyZone(zoneOf(origin, 1, v1))).problems ?? [], []);
      armed = true;
      stats.length = 0;
      const www = rrset(origin, 'www', 'A', ['192.0.2.20']);
      const race = rrset(origin, 'race', 'A', ['192.0.2.21']);
      const api = rrset(origin, 'api', 'A', ['192.0.2.22']);
      const v2 = [...v1.filter((r) => r.type !== 'A'), www, race, api];
      const result = await backend.applyZone(zoneOf(origin, 2, v2));
      assert.ok(raced, 'the concurrent change was made');
      assert.equal(stats[0]?.attempts, 2, 'the first UPDATE failed its prerequisites and was planned again');
      assert.deepEqual(
        (result.problems ?? []).map((p) => [nameKey(p.owner), p.type, p.reason]),
        [[`race.${origin}`, 'A', 'Conflict']],
      );
      const now = await held(origin);
      assert.deepEqual(now.get(`race.${origin} A`), ['198.51.100.1'], 'the hand-made RRset is untouched');
      assert.deepEqual(now.get(`www.${origin} A`), ['192.0.2.20'], 'the owned RRset has the zone’s content');
      assert.deepEqual(now.get(`api.${origin} A`), ['192.0.2.22'], 'nothing of the change is lost');
      assert.ok((await readBack(backend, zoneOf(origin, 2, v2))).programmed);
    });

    test('a change larger than one message is split, and every part lands', async () => {
      const origin = newOrigin();
      const stats: ApplyStats[] = [];
      const backend = backendWith({}, { maxMessageBytes: 2048, onApply: (_o, s) => stats.push(s) });
      const many = Array.from({ length: 60 }, (_, i) => rrset(origin, `host${i}`, 'A', [`192.0.2.${i + 1}`]));
      const zone = zoneOf(origin, 1, [...base(origin), ...many]);
      assert.deepEqual((await backend.applyZone(zone)).problems ?? [], []);
      assert.ok(stats[0]!.messages > 1, `split into ${stats[0]!.messages} messages`);
      const now = await held(origin);
      for (let i = 0; i < 60; i++) assert.deepEqual(now.get(`host${i}.${origin} A`), [`192.0.2.${i + 1}`]);
      assert.ok((await readBack(backend, zone)).programmed);
      await backend.deleteZone(origin);
      assert.equal((await held(origin)).get(`host0.${origin} A`), undefined);
    });

    test('a key the server does not know, and a wrong secret, are BackendRejected with the TSIG error and what to fix', async () => {
      const origin = newOrigin();
      const zone = zoneOf(origin, 1, base(origin));
      const unknown = backendWith({ tsigKey: newKey('nobody-knows-me'), transferKey });
      await assert.rejects(unknown.applyZone(zone), (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.reason, 'BackendRejected');
        assert.equal(e.code, 'RFC2136_TSIG');
        assert.match(e.message, /BADKEY/);
        assert.match(e.message, /tsigKey/);
        return true;
      });
      const wrongSecret = backendWith({ secret: newKey('x').secret, transferKey });
      await assert.rejects(wrongSecret.applyZone(zone), (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'RFC2136_TSIG');
        assert.match(e.message, /BADSIG/);
        return true;
      });
      // The same wrong key on the AXFR read is refused the same way.
      const wrongRead = backendWith({ secret: newKey('x').secret });
      await assert.rejects(wrongRead.applyZone(zone), (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'RFC2136_TSIG');
        return true;
      });
      assert.equal((await held(origin)).get(`www.${origin} A`), undefined, 'nothing was written');
    });

    test('a key allowed to transfer but not to update is BackendRejected (BIND: REFUSED; Knot: NOTAUTH with BADKEY) and changes nothing', async () => {
      const origin = newOrigin();
      const backend = backendWith({ tsigKey: transferKey });
      await assert.rejects(backend.applyZone(zoneOf(origin, 1, base(origin))), (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.reason, 'BackendRejected');
        // Knot answers a key its ACL does not allow with NOTAUTH and TSIG error BADKEY; BIND with REFUSED.
        assert.equal(e.code, kind === 'knot' ? 'RFC2136_TSIG' : 'RFC2136_REFUSED');
        assert.match(e.message, /transfer-only/);
        return true;
      });
      assert.equal((await held(origin)).get(`www.${origin} A`), undefined);
    });

    test('the server down is BackendUnreachable; a zone the server does not serve is BackendRejected', async () => {
      const backend = backendWith();
      const missing = 'not-served.hostile.example.';
      await assert.rejects(backend.applyZone(zoneOf(missing, 1, base(missing))), (e: unknown) => {
        assert.ok(e instanceof BackendError);
        assert.equal(e.code, 'RFC2136_ZONE_NOT_SERVED');
        return true;
      });
      await backend.deleteZone(missing);
      assert.equal(await backend.servedSerial(missing), undefined);
      const origin = newOrigin();
      await primary.halt();
      try {
        await assert.rejects(backend.applyZone(zoneOf(origin, 1, base(origin))), (e: unknown) => {
          assert.ok(e instanceof BackendError);
          assert.equal(e.reason, 'BackendUnreachable');
          return true;
        });
      } finally {
        await primary.start();
      }
    });

    test('hand-made RRsets are never touched or deleted: not by an apply, not where the zone wants them, not by deleting the zone', async () => {
      const origin = newOrigin();
      await primary.nsupdate(origin, [
        `update add keep.${origin} 300 A 198.51.100.7`,
        `update add ${origin} 300 TXT "hand-made apex"`,
        `update add www.${origin} 300 AAAA 2001:db8::99`,
      ]);
      const backend = backendWith();
      const zone = zoneOf(origin, 1, base(origin));
      const result = await backend.applyZone(zone);
      assert.deepEqual(
        (result.problems ?? []).map((p) => [nameKey(p.owner), p.type, p.reason]),
        [[origin, 'TXT', 'Conflict']],
      );
      const before = await held(origin);
      assert.deepEqual(before.get(`keep.${origin} A`), ['198.51.100.7']);
      assert.deepEqual(before.get(`${origin} TXT`), ['"hand-made apex"']);
      assert.deepEqual(before.get(`www.${origin} AAAA`), ['2001:db8::99']);
      assert.deepEqual(before.get(`www.${origin} A`), ['192.0.2.10', '192.0.2.11']);
      await backend.deleteZone(origin);
      const afterDelete = await held(origin);
      assert.deepEqual(afterDelete.get(`keep.${origin} A`), ['198.51.100.7']);
      assert.deepEqual(afterDelete.get(`${origin} TXT`), ['"hand-made apex"']);
      assert.deepEqual(afterDelete.get(`www.${origin} AAAA`), ['2001:db8::99']);
      assert.equal(afterDelete.get(`www.${origin} A`), undefined, 'what Zonekeeper owned is gone');
      assert.equal(afterDelete.get(`${ownershipName(origin)} TXT`), undefined, 'and its ownership record');
    });

    test('ignore rules: a wanted RRset they match is never added, and the zone still reads back as programmed; an owned one is released in place', async () => {
      const origin = newOrigin();
      const backend = backendWith();
      await backend.applyZone(zoneOf(origin, 1, base(origin)));
      const ignore = [{ name: '*.apps' }, { name: 'www', type: 'A' as const }];
      const wanted = rrset(origin, 'x.apps', 'A', ['192.0.2.44']);
      const v2 = [...base(origin).filter((r) => r.type !== 'A'), wanted];
      const zone: ProgrammedZone = { ...zoneOf(origin, 2, v2), ignore };
      const result = await backend.applyZone(zone);
      assert.deepEqual(
        (result.problems ?? []).map((p) => [nameKey(p.owner), p.type, p.reason]),
        [[`x.apps.${origin}`, 'A', 'Conflict']],
      );
      const after = await held(origin);
      assert.equal(after.get(`x.apps.${origin} A`), undefined, 'never added');
      assert.deepEqual(after.get(`www.${origin} A`), ['192.0.2.10', '192.0.2.11'], 'not deleted');
      assert.ok(
        !(after.get(`${ownershipName(origin)} TXT`) ?? []).includes('"www A"'),
        "and no longer recorded as Zonekeeper's",
      );
      assert.ok((await readBack(backend, zone)).programmed, 'what the rules leave out is not pending');
      assert.equal(
        (await readBack(backend, zoneOf(origin, 2, v2))).programmed,
        false,
        'without the rules the wanted RRset is missing',
      );
    });

    test('ownership record deleted by hand: Zonekeeper takes nothing back — its former RRsets are reported as conflicts and survive a zone deletion', async () => {
      const origin = newOrigin();
      const backend = backendWith();
      const zone = zoneOf(origin, 1, base(origin));
      await backend.applyZone(zone);
      await primary.nsupdate(origin, [`update delete ${ownershipName(origin)} TXT`]);
      const v2 = [...base(origin).filter((r) => r.type !== 'A'), rrset(origin, 'www', 'A', ['192.0.2.99'])];
      const result = await backend.applyZone(zoneOf(origin, 2, v2));
      assert.deepEqual(
        (result.problems ?? []).map((p) => `${nameKey(p.owner)} ${p.type} ${p.reason}`).sort(),
        [`${origin} TXT Conflict`, `docs.${origin} CNAME Conflict`, `www.${origin} A Conflict`].sort(),
      );
      assert.deepEqual(
        (await held(origin)).get(`www.${origin} A`),
        ['192.0.2.10', '192.0.2.11'],
        'left alone',
      );
      await backend.deleteZone(origin);
      const now = await held(origin);
      assert.deepEqual(now.get(`www.${origin} A`), ['192.0.2.10', '192.0.2.11']);
      assert.deepEqual(now.get(`docs.${origin} CNAME`), ['www.contract.example.']);
    });

    test('ownership record with entries that name nothing valid: they claim nothing; the SOA and RRsets outside the zone are never touched', async () => {
      const origin = newOrigin();
      const backend = backendWith();
      await backend.applyZone(zoneOf(origin, 1, base(origin)));
      const soaBefore = (await held(origin)).get(`${origin} SOA`)![0]!.split(' ').slice(0, 2).join(' ');
      await primary.nsupdate(origin, [
        `update add ${ownershipName(origin)} 300 TXT "@ SOA"`,
        `update add ${ownershipName(origin)} 300 TXT "not an entry at all"`,
        `update add ${ownershipName(origin)} 300 TXT "www.elsewhere.example. A"`,
        `update add ${ownershipName(origin)} 300 TXT "gone BOGUS"`,
      ]);
      const result = await backend.applyZone(zoneOf(origin, 2, base(origin)));
      assert.deepEqual(result.problems ?? [], []);
      const now = await held(origin);
      assert.equal(now.get(`${origin} SOA`)![0]!.split(' ').slice(0, 2).join(' '), soaBefore);
      assert.deepEqual(now.get(`www.${origin} A`), ['192.0.2.10', '192.0.2.11']);
      assert.ok((await readBack(backend, zoneOf(origin, 2, base(origin)))).programmed);
    });
  });
}

/**
 * The controller in-process (MemoryStore, the backend registry) with an rfc2136 class whose
 * resyncSeconds is 1: the zone is Programmed once its content reads back; drift made with nsupdate is
 * repaired by the resync with nothing changed in the resources; a hand-made RRset in the way is a
 * Conflict on its DNSRecordSet.
 */
for (const kind of ['knot', 'bind'] as const) {
  describe(`rfc2136 class driven by the controller (${kind === 'knot' ? 'knotd' : 'named'})`, () => {
    const ORIGIN = 'ctl.example.';
    const ZONE = 'dns/ctl-example';
    const updateKey = newKey('zonekeeper-update');
    const transferKey = newKey('transfer-only');
    const handKey = newKey('by-hand');
    let primary: UpdatePrimary;
    let store: MemoryStore;
    let controller: Controller;
    let factory: BackendFactory;

    const cond = (k: Kind, key: string, type: string) =>
      (store.get(k, key) as Resource | undefined)?.status?.conditions?.find((c) => c.type === type);

    async function held(name: string, type: string): Promise<string[] | undefined> {
      const { records } = await axfr({
        host: '127.0.0.1',
        port: primary.port,
        zone: ORIGIN,
        key: parseTsigKey(transferKey),
        timeoutMs: 5000,
        maxRecords: 100_000,
      });
      const found = records
        .filter((r) => nameEquals(r.name, name) && typeName(r.type) === type)
        .map((r) => printRdata(r.data as Rdata))
        .sort();
      return found.length > 0 ? found : undefined;
    }

    before(async () => {
      primary = await startUpdatePrimary({ kind, zones: [ORIGIN], updateKey, transferKey, handKey });
      store = new MemoryStore();
      const secrets = fileAndEnvSecrets({ ZK_RFC2136_KEY: updateKey.secret });
      factory = createBackendFactory({ builtin: new BuiltinBackend(new ZoneTable()), secrets });
      controller = new Controller({ store, backend: factory, serials: new MemorySerialStore(), secrets });
      store.apply(
        zoneClass('knot', ['ns1.ctl.example.', 'ns2.ctl.example.'], {
          backend: {
            rfc2136: {
              server: '127.0.0.1',
              port: primary.port,
              tsigKey: {
                name: updateKey.name,
                algorithm: 'hmac-sha256',
                secretRef: { env: 'ZK_RFC2136_KEY' },
              },
              resyncSeconds: 1,
              timeoutSeconds: 3,
            },
          },
        }),
      );
      store.apply(zone('dns', 'ctl-example', 'ctl.example', { className: 'knot' }));
      for (const [name, type, records] of [
        ['www', 'A', ['192.0.2.10']],
        ['docs', 'CNAME', ['www']],
        ['@', 'MX', ['10 mail']],
        // In-zone NS and MX targets need addresses: BIND's integrity checks refuse an UPDATE that
        // leaves one without ("post update name server sanity check failed", "has no address records").
        ['mail', 'A', ['192.0.2.25']],
        ['ns1', 'A', ['192.0.2.53']],
        ['ns2', 'A', ['192.0.2.54']],
      ] as const)
        store.apply(
          recordSet('dns', `${name === '@' ? 'apex' : name}-${type.toLowerCase()}`, {
            zoneRef: { name: 'ctl-example' },
            name,
            type,
            records: [...records],
          }),
        );
      controller.start();
    });
    after(async () => {
      controller?.stop();
      factory?.close();
      await primary?.close();
    });

    test('Programmed once the content reads back; the server keeps its own serial', async () => {
      await waitFor(async () =>
        cond('DNSZone', ZONE, 'Programmed')?.status === 'True' ? true : undefined,
      ).catch((e: Error) => {
        throw new Error(
          `${e.message}: ${JSON.stringify(cond('DNSZone', ZONE, 'Programmed'))}\n${primary.log().slice(-3000)}`,
        );
      });
      assert.deepEqual(await held(`www.${ORIGIN}`, 'A'), ['192.0.2.10']);
      assert.deepEqual(await held(ORIGIN, 'NS'), ['ns1.ctl.example.', 'ns2.ctl.example.']);
      const soa = (await held(ORIGIN, 'SOA'))![0]!;
      assert.equal(soa.split(' ')[0], 'ns1.contract.example.', 'the server’s SOA, not Zonekeeper’s');
      assert.equal(cond('DNSZoneClass', 'knot', 'Ready')?.status, 'True');
    });

    test('drift made with nsupdate is repaired by the resync; hand-made RRsets stay', async () => {
      await primary.nsupdate(ORIGIN, [
        `update delete www.${ORIGIN} A`,
        `update add www.${ORIGIN} 300 A 203.0.113.66`,
        `update delete docs.${ORIGIN} CNAME`,
        `update add hand.${ORIGIN} 300 A 198.51.100.7`,
      ]);
      await waitFor(async () => {
        const www = await held(`www.${ORIGIN}`, 'A');
        const docs = await held(`docs.${ORIGIN}`, 'CNAME');
        return www?.[0] === '192.0.2.10' && docs?.[0] === `www.${ORIGIN}` ? true : undefined;
      }, 15_000);
      assert.deepEqual(await held(`hand.${ORIGIN}`, 'A'), ['198.51.100.7']);
    });

    test('a hand-made RRset in the way is a Conflict on its DNSRecordSet; the rest is programmed', async () => {
      await primary.nsupdate(ORIGIN, [`update add taken.${ORIGIN} 300 TXT "by hand"`]);
      store.apply(
        recordSet('dns', 'taken-txt', {
          zoneRef: { name: 'ctl-example' },
          name: 'taken',
          type: 'TXT',
          records: ['"ours"'],
        }),
      );
      store.apply(
        recordSet('dns', 'api-a', {
          zoneRef: { name: 'ctl-example' },
          name: 'api',
          type: 'A',
          records: ['192.0.2.30'],
        }),
      );
      await waitFor(
        async () =>
          cond('DNSRecordSet', 'dns/taken-txt', 'Accepted')?.reason === 'Conflict' ? true : undefined,
        15_000,
      );
      await waitFor(
        async () => ((await held(`api.${ORIGIN}`, 'A'))?.[0] === '192.0.2.30' ? true : undefined),
        15_000,
      );
      assert.deepEqual(await held(`taken.${ORIGIN}`, 'TXT'), ['"by hand"']);
      assert.match(cond('DNSRecordSet', 'dns/taken-txt', 'Accepted')?.message ?? '', /ownership record/);
    });
  });
}
