/**
 * The backend contract kit: one suite every backend must pass, run by each backend's own small test
 * file with a harness that starts its target, makes the backend, reads the target's state back (from
 * the target itself, never through the backend), and injects drift, a refused record set and an
 * outage. Where a target truly cannot have one of those, the harness says so with a reason and the
 * test is reported as skipped "not applicable: <reason>" — never passed silently.
 *
 * The suite drives the Backend interface the way the controller does: whole zones and deltas against
 * the serial the backend holds, re-applies, deletions; Programmed is read back as the backend's
 * capabilities define it (`readBack`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Name, nameKey } from '../../dns/name.ts';
import { parseRdata, printRdata } from '../../dns/rdata.ts';
import type { RecordTypeName } from '../../dns/rrtype.ts';
import type { RRset, RRsetOrigin } from '../../zones/rrset.ts';
import type { SoaFields } from '../../zones/soa.ts';
import type { ResolvedTransfers } from '../../zones/transfers.ts';
import {
  type ApplyResult,
  type Backend,
  BackendError,
  type ProgrammedZone,
  type RRsetProblem,
  readBack,
} from '../backend.ts';

/** A harness operation the target cannot have, and why (reported as not applicable). */
export interface NotApplicable {
  notApplicable: string;
}

/** What the target holds for a zone, read from the target itself. */
export interface HeldZone {
  /** The serial of the target's SOA; undefined for a target without one. */
  serial: number | undefined;
  /** RRsets other than the SOA: `owner TYPE` (owner lower-case, absolute) → records in presentation form. */
  rrsets: Map<string, string[]>;
}

export interface BackendHarness {
  /** Starts the target and makes the backend (once for the suite). */
  start(): Promise<Backend>;
  /** Stops the target and releases everything start made. */
  stop(): Promise<void>;
  /** What the target holds for `origin`, read from the target; undefined when it holds no such zone. */
  read(origin: Name): Promise<HeldZone | undefined>;
  /** Transfer settings handed with every zone (e.g. so `read` can use AXFR). */
  transfers?: ResolvedTransfers;
  /**
   * Changes the target behind the backend's back, as a person editing it or a lost process would:
   * `rrset` (programmed) is the one to change where the target lets anyone edit it.
   */
  drift: ((origin: Name, rrset: RRset) => Promise<void>) | NotApplicable;
  /**
   * Prepares the target so one RRset of the zone (already created) cannot be programmed, and
   * returns it with the reason the backend must report it with.
   */
  refuse: ((origin: Name) => Promise<{ rrset: RRset; reason: RRsetProblem['reason'] }>) | NotApplicable;
  /**
   * Writes an RRset into the target by hand (not through the backend), as a person migrating a zone
   * would; for ignore rules (`ProgrammedZone.ignore`), which only targets others can edit honour.
   */
  handMade: ((origin: Name, rrset: RRset) => Promise<void>) | NotApplicable;
  /** Makes the target unreachable; the function returned brings it back. */
  outage: (() => Promise<() => Promise<void>>) | NotApplicable;
  /** How long to wait for a backend to settle by itself (e.g. a replaced process). Default 30 s: an upper bound for a loaded machine, not a timing (a backend that settles returns at once). */
  settleMs?: number;
}

const SOA: SoaFields = {
  ttl: 300,
  mname: 'ns1.contract.example.',
  rname: 'hostmaster.contract.example.',
  refresh: 3600,
  retry: 600,
  expire: 604800,
  minimum: 300,
};

/** An RRset of a record set (namespace `contract`, named `id`), records in presentation form. */
export function rrset(
  origin: Name,
  owner: string,
  type: RecordTypeName,
  records: string[],
  id = `${owner.replace(/[^a-z0-9]/g, '') || 'apex'}-${type.toLowerCase()}`,
  ttl = 300,
): RRset {
  const name = owner === '@' ? origin : `${owner}.${origin}`;
  const source: RRsetOrigin =
    owner === '@' && type === 'NS'
      ? { kind: 'apex' }
      : { kind: 'recordSet', namespace: 'contract', name: id };
  return { owner: name, type, ttl, rdata: records.map((r) => parseRdata(type, r, origin)), origin: source };
}

/** The `HeldZone` key and records of an RRset, as `read` reports them. */
export function heldKey(owner: Name, type: RecordTypeName): string {
  return `${nameKey(owner)} ${type}`;
}

/** Records in presentation form, parsed and printed the way the kit compares them. */
export function canonicalRecords(type: RecordTypeName, records: string[], origin: Name): string[] {
  return records.map((r) => printRdata(parseRdata(type, r, origin))).sort();
}

interface ZoneVersion {
  serial: number;
  rrsets: RRset[];
}

/** Registers the contract suite for one backend. */
export function backendContract(label: string, harness: BackendHarness): void {
  describe(`backend contract: ${label}`, () => {
    let backend: Backend;
    let zones = 0;
    const settleMs = harness.settleMs ?? 30_000;

    before(async () => {
      backend = await harness.start();
    });
    after(async () => {
      await harness.stop();
    });

    /** A zone name of its own per test, so tests never see each other's zones. */
    const newOrigin = (): Name => `t${++zones}.contract.example.`;

    const base = (origin: Name): RRset[] => [
      rrset(origin, '@', 'NS', ['ns1.contract.example.', 'ns2.contract.example.']),
      rrset(origin, 'www', 'A', ['192.0.2.10', '192.0.2.11']),
      rrset(origin, 'www', 'AAAA', ['2001:db8::10']),
      rrset(origin, '@', 'MX', ['10 mail.contract.example.']),
      rrset(origin, '@', 'TXT', ['"v=spf1 -all"', '"two words"']),
      rrset(origin, 'docs', 'CNAME', ['www.contract.example.']),
    ];

    const programmedZone = (
      origin: Name,
      version: ZoneVersion & { ignore?: ProgrammedZone['ignore'] },
      delta?: ProgrammedZone['delta'],
    ): ProgrammedZone => ({
      ...(version.ignore ? { ignore: version.ignore } : {}),
      key: `contract/${origin}`,
      origin,
      soa: SOA,
      serial: version.serial,
      rrsets: () => version.rrsets,
      ...(harness.transfers ? { transfers: harness.transfers } : {}),
      ...(delta ? { delta } : {}),
    });

    /** Applies, then reads back as the controller does; returns what the apply reported. */
    async function apply(
      origin: Name,
      version: ZoneVersion & { ignore?: ProgrammedZone['ignore'] },
      delta?: ProgrammedZone['delta'],
    ) {
      const zone = programmedZone(origin, version, delta);
      const result: ApplyResult | undefined = (await backend.applyZone(zone)) ?? undefined;
      return { result, read: await readBack(backend, zone) };
    }

    /** Waits (bounded) until the backend reads back the version as programmed. */
    async function settled(origin: Name, version: ZoneVersion): Promise<void> {
      const zone = programmedZone(origin, version);
      const deadline = performance.now() + settleMs;
      for (;;) {
        const read = await readBack(backend, zone);
        if (read.programmed) return;
        if (performance.now() > deadline) assert.fail(`not programmed after settling: ${read.message}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    /** The target holds exactly `version` (RRsets compared by content; `except` left out). */
    async function assertHeld(origin: Name, version: ZoneVersion, except: RRset[] = []): Promise<void> {
      const held = await harness.read(origin);
      assert.ok(held, `the target holds ${origin}`);
      if (held.serial !== undefined && backend.capabilities.serial === 'authority')
        assert.equal(held.serial, version.serial, 'the target serves the serial assigned');
      const skip = new Set(except.map((r) => heldKey(r.owner, r.type)));
      const want = new Map(
        version.rrsets.map((r) => [heldKey(r.owner, r.type), r.rdata.map((d) => printRdata(d)).sort()]),
      );
      const got = new Map([...held.rrsets].filter(([k]) => !skip.has(k)));
      for (const k of skip) want.delete(k);
      assert.deepEqual(
        Object.fromEntries([...got].sort()),
        Object.fromEntries([...want].sort()),
        'the target holds exactly the zone',
      );
    }

    const notApplicable = (what: NotApplicable) => ({
      skip: `not applicable to ${label}: ${what.notApplicable}`,
    });

    test('create: a new zone is served whole at its serial, and read back as Programmed', async () => {
      const origin = newOrigin();
      assert.equal(await backend.servedSerial(origin), undefined, 'an unknown zone has no serial');
      assert.equal(await harness.read(origin), undefined);
      const v1 = { serial: 2026010100, rrsets: base(origin) };
      const { result, read } = await apply(origin, v1);
      assert.deepEqual(result?.problems ?? [], []);
      assert.ok(read.programmed, read.message);
      await assertHeld(origin, v1);
    });

    test('change: a delta from the held serial and a whole zone both end at the new content', async () => {
      const origin = newOrigin();
      const v1 = { serial: 10, rrsets: base(origin) };
      await apply(origin, v1);
      const www = rrset(origin, 'www', 'A', ['192.0.2.20']);
      const mail = rrset(origin, 'mail', 'A', ['192.0.2.25']);
      const v2 = {
        serial: 11,
        rrsets: [...v1.rrsets.filter((r) => !(r.type === 'A' && r.owner === www.owner)), www, mail],
      };
      const patched = await apply(origin, v2, { fromSerial: 10, upserts: [www, mail], deletes: [] });
      assert.ok(patched.read.programmed, patched.read.message);
      await assertHeld(origin, v2);
      // A whole zone (no delta): what a backend in an unknown state is sent.
      const txt = rrset(origin, '@', 'TXT', ['"changed"']);
      const v3 = { serial: 12, rrsets: [...v2.rrsets.filter((r) => r.type !== 'TXT'), txt] };
      const whole = await apply(origin, v3);
      assert.ok(whole.read.programmed, whole.read.message);
      await assertHeld(origin, v3);
    });

    test('delete: RRsets deleted by a delta and left out of a whole zone are gone', async () => {
      const origin = newOrigin();
      const v1 = { serial: 20, rrsets: base(origin) };
      await apply(origin, v1);
      const aaaa = v1.rrsets.find((r) => r.type === 'AAAA')!;
      const v2 = { serial: 21, rrsets: v1.rrsets.filter((r) => r !== aaaa) };
      const patched = await apply(origin, v2, {
        fromSerial: 20,
        upserts: [],
        deletes: [{ owner: aaaa.owner, type: 'AAAA' }],
      });
      assert.ok(patched.read.programmed, patched.read.message);
      await assertHeld(origin, v2);
      const v3 = { serial: 22, rrsets: v2.rrsets.filter((r) => r.type !== 'CNAME') };
      const whole = await apply(origin, v3);
      assert.ok(whole.read.programmed, whole.read.message);
      await assertHeld(origin, v3);
    });

    test('idempotent re-apply: the same serial again, whole or as an empty delta, changes nothing', async () => {
      const origin = newOrigin();
      const v1 = { serial: 30, rrsets: base(origin) };
      await apply(origin, v1);
      for (const delta of [undefined, { fromSerial: 30, upserts: [], deletes: [] }]) {
        const again = await apply(origin, v1, delta);
        assert.deepEqual(again.result?.problems ?? [], []);
        assert.ok(again.read.programmed, again.read.message);
        await assertHeld(origin, v1);
      }
    });

    const drift = harness.drift;
    test(
      'drift repair: a change behind the backend’s back is undone by re-applying the zone',
      'notApplicable' in drift ? notApplicable(drift) : {},
      async () => {
        if ('notApplicable' in drift) return;
        const origin = newOrigin();
        const v1 = { serial: 40, rrsets: base(origin) };
        await apply(origin, v1);
        await drift(origin, v1.rrsets.find((r) => r.type === 'A')!);
        // What a resync sends: the whole zone at the serial the backend was given.
        const again = await apply(origin, v1);
        assert.deepEqual(again.result?.problems ?? [], []);
        await settled(origin, v1);
        await assertHeld(origin, v1);
      },
    );

    const handMade = harness.handMade;
    test(
      'ignore rules: RRsets they match stay as the target holds them, whoever made them, even ones the backend created',
      'notApplicable' in handMade ? notApplicable(handMade) : {},
      async () => {
        if ('notApplicable' in handMade) return;
        const origin = newOrigin();
        const legacy = rrset(origin, 'legacy', 'A', ['192.0.2.77']);
        const v1 = { serial: 45, rrsets: [...base(origin), legacy] };
        await apply(origin, v1);
        await assertHeld(origin, v1);
        // By hand: a new RRset, and a change to one the backend created.
        const manual = rrset(origin, 'manual', 'TXT', ['"made by hand"']);
        const changed = rrset(origin, 'legacy', 'A', ['203.0.113.7']);
        await handMade(origin, manual);
        await handMade(origin, changed);
        // The zone no longer has legacy, and wants manual with other content: both are ignored.
        const wantsManual = rrset(origin, 'manual', 'TXT', ['"from zonekeeper"']);
        const ignore = [
          { name: 'legacy' },
          { name: '*', type: 'TXT' as const },
          { name: '@', type: 'TXT' as const },
        ];
        const v2 = {
          serial: 46,
          rrsets: [...base(origin).filter((r) => r.type !== 'TXT'), wantsManual],
          ignore,
        };
        const { result, read } = await apply(origin, v2);
        assert.ok(read.programmed, read.message);
        assert.deepEqual(
          (result?.problems ?? []).map((p) => `${p.owner} ${p.type} ${p.reason}`),
          [`${wantsManual.owner} TXT Conflict`],
          'a desired RRset an ignore rule matches is reported, not written',
        );
        const held = await harness.read(origin);
        assert.deepEqual(
          held?.rrsets.get(heldKey(legacy.owner, 'A')),
          ['203.0.113.7'],
          'changed by hand: kept',
        );
        assert.deepEqual(
          held?.rrsets.get(heldKey(manual.owner, 'TXT')),
          ['"made by hand"'],
          'made by hand: kept',
        );
        const apexTxt = base(origin).find((r) => r.type === 'TXT')!;
        assert.ok(
          held?.rrsets.has(heldKey(apexTxt.owner, 'TXT')),
          'the apex TXT the backend created is ignored too: kept',
        );
        // Without the rules, legacy is not the backend's any more: still left alone.
        const v3 = { serial: 47, rrsets: base(origin) };
        const again = await apply(origin, v3);
        assert.ok(again.read.programmed, again.read.message);
        const after = await harness.read(origin);
        assert.deepEqual(
          after?.rrsets.get(heldKey(legacy.owner, 'A')),
          ['203.0.113.7'],
          'released, not deleted',
        );
      },
    );

    const refuse = harness.refuse;
    test(
      'partial failure: a refused RRset is reported on its record set, the rest is programmed',
      'notApplicable' in refuse ? notApplicable(refuse) : {},
      async () => {
        if ('notApplicable' in refuse) return;
        const origin = newOrigin();
        const v1 = { serial: 50, rrsets: base(origin) };
        await apply(origin, v1);
        const refused = await refuse(origin);
        const good = rrset(origin, 'api', 'A', ['192.0.2.30']);
        const v2 = { serial: 51, rrsets: [...v1.rrsets, refused.rrset, good] };
        const partial = await apply(origin, v2, {
          fromSerial: 50,
          upserts: [refused.rrset, good],
          deletes: [],
        });
        assert.deepEqual(
          (partial.result?.problems ?? []).map((p) => ({
            owner: nameKey(p.owner),
            type: p.type,
            origin: p.origin,
            reason: p.reason,
          })),
          [
            {
              owner: nameKey(refused.rrset.owner),
              type: refused.rrset.type,
              origin: refused.rrset.origin,
              reason: refused.reason,
            },
          ],
          'exactly the refused RRset, on its record set',
        );
        assert.ok(partial.result!.problems![0]!.message.length > 0, 'the problem says what is wrong');
        assert.ok(partial.read.programmed, `the rest is served: ${partial.read.message}`);
        await assertHeld(origin, v2, [refused.rrset]);
        // The record set fixed (here: removed): nothing left to report.
        const v3 = { serial: 52, rrsets: v2.rrsets.filter((r) => r !== refused.rrset) };
        const fixed = await apply(origin, v3, {
          fromSerial: 51,
          upserts: [],
          deletes: [{ owner: refused.rrset.owner, type: refused.rrset.type }],
        });
        assert.deepEqual(fixed.result?.problems ?? [], []);
        assert.ok(fixed.read.programmed, fixed.read.message);
      },
    );

    test('serial read-back: the serial the target serves, from the target, after every change', async () => {
      const origin = newOrigin();
      const v1 = { serial: 60, rrsets: base(origin) };
      await apply(origin, v1);
      if (backend.capabilities.serial === 'authority') {
        assert.equal(await backend.servedSerial(origin), 60);
        assert.equal((await harness.read(origin))?.serial, 60);
      }
      const v2 = { serial: 61, rrsets: [...v1.rrsets, rrset(origin, 'new', 'A', ['192.0.2.61'])] };
      const { read } = await apply(origin, v2, { fromSerial: 60, upserts: [v2.rrsets.at(-1)!], deletes: [] });
      assert.ok(read.programmed, read.message);
      if (backend.capabilities.serial === 'authority') {
        assert.equal(await backend.servedSerial(origin), 61);
        assert.equal((await harness.read(origin))?.serial, 61);
        // A higher serial asked for but not given is never read back as Programmed.
        const later = await readBack(backend, programmedZone(origin, { serial: 62, rrsets: v2.rrsets }));
        assert.equal(later.programmed, false, later.message);
      }
    });

    test('deletion: the zone is gone from the target; deleting a missing zone succeeds', async () => {
      const origin = newOrigin();
      await apply(origin, { serial: 70, rrsets: base(origin) });
      await backend.deleteZone(origin);
      assert.equal(await harness.read(origin), undefined);
      assert.equal(await backend.servedSerial(origin), undefined);
      await backend.deleteZone(origin);
      await backend.deleteZone(newOrigin());
    });

    const outage = harness.outage;
    test(
      'deletion holds until clean: deleting fails while the target is unreachable, succeeds once it is back',
      'notApplicable' in outage ? notApplicable(outage) : {},
      async () => {
        if ('notApplicable' in outage) return;
        const origin = newOrigin();
        const v1 = { serial: 80, rrsets: base(origin) };
        await apply(origin, v1);
        const restore = await outage();
        try {
          await assert.rejects(backend.deleteZone(origin), (e: unknown) => {
            assert.ok(e instanceof BackendError, `a BackendError, got ${String(e)}`);
            return true;
          });
        } finally {
          await restore();
        }
        await backend.deleteZone(origin);
        assert.equal(await harness.read(origin), undefined);
        assert.equal(await backend.servedSerial(origin), undefined);
      },
    );
  });
}
