import type { DnssecStatus, EffectiveDnssec } from '../../api/dnssec.ts';
import { dnskeyRdata, dsOf, generateDnssecKey, keyTag } from '../../dns/dnssec/keys.ts';
import { type Name, nameKey, stripFirstLabel } from '../../dns/name.ts';
import { printRdata } from '../../dns/rdata.ts';
import { RRType } from '../../dns/rrtype.ts';
import type { ZoneImageBuilder } from '../../server/image/image-builder.ts';
import type { SelectionBinding, SelectionSink } from '../../server/selection/selection-table.ts';
import type { SteeringBinder } from '../../server/selection/steering/steering-binder.ts';
import type { Notifier } from '../../server/transfer/notifier.ts';
import { ZoneApplier } from '../../server/zone-apply.ts';
import type { ZoneDnssecData } from '../../server/zone-dnssec.ts';
import { ZoneSnapshot } from '../../server/zone-snapshot.ts';
import type { ServedZone, ZoneTable } from '../../server/zone-table.ts';
import { type DisableStep, parseDisable, printDisable, stepDisable } from '../../zones/dnssec-disable.ts';
import { type LifecycleStep, stepKeyLifecycle } from '../../zones/dnssec-key-lifecycle.ts';
import { inEffectAt, keysAt, nextKeyEvent, type ZoneKey } from '../../zones/dnssec-key-set.ts';
import type { ResourceKey } from '../../zones/resource-key.ts';
import type { RRset } from '../../zones/rrset.ts';
import {
  type ApplyResult,
  type Backend,
  type BackendCapabilities,
  BackendError,
  type ProgrammedZone,
} from '../backend.ts';
import { AliasTargets } from './alias-targets.ts';
import type { SigningThread } from './signing-thread.ts';
import { type DnssecKeyStore, KeptSigners, signedStatus, signForServing } from './zone-signing.ts';

export interface BuiltinBackendOptions {
  /**
   * For the server that answers (`serve`) when it has no `--alias-resolver`: report ALIAS record sets
   * whose target is outside the zones served (their A/AAAA queries get SERVFAIL) as problems, and hand
   * the zones whose report may change when a zone comes or goes to `recheck` (the controller applies
   * them again). Left out where the table is not what clients query (the operator).
   */
  aliasCheck?: { recheck: (zone: ResourceKey) => void };
  /**
   * Steered RRsets (health checks, selection) become selection bindings through it; without it every
   * candidate is served. The server that answers (`serve`) gives one.
   */
  steering?: SteeringBinder;
  /** Where bindings go: this backend's table by default, every DNS process for a worker pool. */
  selectionSink?: SelectionSink;
  /**
   * Where the statuses are written (`serve`, the operator): a zone whose refused health checks were
   * started after all (room freed elsewhere) is handed here to be reconciled again.
   */
  recheck?: (zone: ResourceKey) => void;
  /**
   * Signs zones whose `spec.dnssec` is enabled, with keys from this store (ADR 0021). Without it the
   * built-in server does not sign (its capabilities say so, and signed zones are served unsigned).
   */
  dnssecKeys?: DnssecKeyStore;
  /** Signs on this thread instead of this process's own (answering) thread when given. */
  signingThread?: SigningThread;
  /**
   * Builds the images of zones the table holds as images (the DNS thread pool's main thread, ADR
   * 0020 steps 4 and 5): a change to such a zone becomes an overlay (`ZoneApplier.patchImage`).
   */
  images?: ZoneImageBuilder;
  /**
   * What this backend programs is served by other processes that keep serving it while this one is
   * down (the operator's leader: `zonekeeper server` replicas read the API). Default false: the table
   * is this process's own (`Backend.keepsServing`).
   */
  keepsServing?: boolean;
}

/**
 * The built-in server: Zonekeeper's serial is the one it serves; it serves transfers and NOTIFY per
 * the class and answers ALIAS itself; the table is this process's own, so there is no drift to repair.
 */
export const BUILTIN_CAPABILITIES: BackendCapabilities = {
  serial: 'authority',
  transfers: true,
  alias: true,
  steering: true,
  dnssec: false,
  driftRepair: false,
};

/** The built-in server with a key store: it signs, at the signing time recorded with each serial. */
export const SIGNING_BUILTIN_CAPABILITIES: BackendCapabilities = {
  ...BUILTIN_CAPABILITIES,
  dnssec: true,
  dnssecAtSerial: true,
};

/**
 * The built-in server as a backend. A change arrives as a delta and patches the served zone in place
 * (work proportional to the change); a zone the server does not hold at the delta's base serial is
 * built whole and swapped in. With a notifier, secondaries are told of every new serial (RFC 1996).
 */
export class BuiltinBackend implements Backend, SelectionSink {
  readonly name = 'builtin';
  readonly capabilities: BackendCapabilities;
  /** Applies build and hand over images within this process: every zone at once. */
  readonly applyConcurrency = Number.POSITIVE_INFINITY;
  readonly keepsServing: boolean;
  private readonly table: ZoneTable<ServedZone>;
  private readonly dnssecKeys: DnssecKeyStore | undefined;
  /** Per signed zone: its incremental signer, kept from one serial to the next (no signing thread). */
  private readonly signatures = new KeptSigners();
  private readonly signingThread: SigningThread | undefined;
  private readonly notifier: Notifier | undefined;
  private readonly zones: ZoneApplier;
  private readonly aliases: AliasTargets | undefined;
  private readonly steering: SteeringBinder | undefined;
  private readonly sink: SelectionSink;
  /** The zone of each origin applied here (for `recheck`). */
  private readonly keys = new Map<string, ResourceKey>();

  constructor(table: ZoneTable<ServedZone>, notifier?: Notifier, options: BuiltinBackendOptions = {}) {
    this.table = table;
    this.dnssecKeys = options.dnssecKeys;
    this.signingThread = options.signingThread;
    this.capabilities = options.dnssecKeys ? SIGNING_BUILTIN_CAPABILITIES : BUILTIN_CAPABILITIES;
    this.keepsServing = options.keepsServing ?? false;
    this.steering = options.steering;
    const recheck = options.recheck;
    if (this.steering && recheck)
      this.steering.onRefusalsChanged = (origin) => {
        const key = this.keys.get(nameKey(origin));
        if (key) recheck(key);
      };
    this.sink = options.selectionSink ?? this;
    this.notifier = notifier;
    this.zones = new ZoneApplier(table, options.images ? { images: options.images } : {});
    this.aliases = options.aliasCheck ? new AliasTargets(table, options.aliasCheck.recheck) : undefined;
  }

  async applyZone(zone: ProgrammedZone): Promise<ApplyResult | undefined> {
    this.keys.set(nameKey(zone.origin), zone.key);
    const current = this.table.get(zone.origin);
    const signing = zone.dnssec && this.dnssecKeys ? zone.dnssec : undefined;
    // The keys first: stored durably before anything signed with them is served.
    const keys = signing
      ? await signingStep(zone.origin, 'DNSSEC_KEYS', 'read or store its DNSSEC keys', () =>
          this.dnssecKeys!.keysFor(zone.origin, signing),
        )
      : undefined;
    const signedAt = zone.signedAt ?? Math.floor(Date.now() / 1000);
    if (keys && zone.keyTags) {
      // Only the tags of the keys in effect at the signing time: a key a rollover prepares for later
      // is not part of this serial. The DS digests of `signedStatus` are made once, for the result.
      const held = keys.filter((k) => inEffectAt(k, signedAt)).map((k) => keyTag(dnskeyRdata(k.key)));
      const recorded = [...zone.keyTags].sort((a, b) => a - b);
      if (held.sort((a, b) => a - b).join() !== recorded.join())
        throw new BackendError(
          'BackendRejected',
          `zone ${zone.origin}: the DNSSEC keys read (key tags ${held.join(', ')}) are not the ones serial ${zone.serial} ` +
            `was signed with (key tags ${recorded.join(', ')}); the serial served stays until the keys match`,
          { code: 'DNSSEC_KEYS' },
        );
    }
    if (
      current &&
      current.serial === zone.serial &&
      (current instanceof ZoneSnapshot && current.dnssec !== undefined) === (signing !== undefined)
    ) {
      this.zones.setTransfers(current, zone.transfers);
      return this.result(
        zone,
        signing && keys ? await this.lifecycle(zone, signing, keys, signedAt) : undefined,
      );
    }
    const { origin, soa, serial, delta, transfers } = zone;
    if (!signing) {
      this.signatures.forget(origin);
      this.signingThread?.forget(origin);
    }
    if (signing && keys) {
      // A signed zone is swapped in whole at every serial (its signatures cover the serial); the signer
      // keeps the zone's chain and signatures, and signs only what the change touches.
      const rrsets = [...zone.rrsets()];
      let dnssec: ZoneDnssecData;
      if (this.signingThread) {
        const thread = this.signingThread;
        dnssec = await signingStep(origin, 'DNSSEC_SIGNING', 'sign', () =>
          thread.sign({ origin, soa, serial, rrsets }, signing, keys, signedAt, delta),
        );
      } else {
        const kept = this.signatures;
        dnssec = await signingStep(origin, 'DNSSEC_SIGNING', 'sign', async () =>
          signForServing({ origin, soa, serial, rrsets }, signing, keys, signedAt, undefined, kept),
        );
      }
      const seen: RRset[] = [];
      const steered: RRset[] = [];
      const tapped = tap(rrsets, this.aliases ? seen : undefined, this.steering ? steered : undefined);
      this.zones.replace(origin, soa, serial, tapped, transfers, dnssec);
      this.aliases?.replace(zone.key, zone.origin, seen);
      if (!current) this.aliases?.servedChanged(zone.origin);
      await this.steering?.replace(this.sink, origin, steered);
    } else if (
      current &&
      delta &&
      (this.zones.patch(origin, soa, serial, delta.fromSerial, delta, transfers) ||
        // Held as a zone image (DNS threads, ADR 0020): an overlay of the changed names over its base.
        this.zones.patchImage(
          origin,
          soa,
          serial,
          delta.fromSerial,
          delta,
          () => zone.rrsets(),
          transfers,
          zone.byName,
        ))
    ) {
      this.aliases?.patch(zone.key, zone.origin, delta);
      await this.steering?.patch(this.sink, origin, delta);
    } else {
      const aliases = this.aliases;
      let seen: RRset[] = [];
      let steered: RRset[] = [];
      const content = (): Iterable<RRset> => {
        seen = [];
        steered = [];
        return tap(zone.rrsets(), aliases ? seen : undefined, this.steering ? steered : undefined);
      };
      // Where zones are held as images (the DNS threads' pool), the image is built straight from the
      // content, no objects of the zone made first; objects where it cannot be (DNSSEC material, an
      // RRset no image can hold), the content read again.
      if (!this.zones.replaceWithImage(origin, soa, serial, content(), transfers))
        this.zones.replace(origin, soa, serial, content(), transfers);
      aliases?.replace(zone.key, zone.origin, seen);
      // A zone served from now on may hold the targets of other zones' ALIAS record sets.
      if (!current) aliases?.servedChanged(zone.origin);
      await this.steering?.replace(this.sink, origin, steered);
    }
    if (!signing && current?.dnssec !== undefined && this.dnssecKeys?.update) {
      // Served unsigned now: the keys of a zone whose signing was turned off (RFC 8078 §4) go only
      // after this, so no serial signed before is left without its keys.
      await signingStep(zone.origin, 'DNSSEC_KEYS', 'remove the DNSSEC keys of', () =>
        this.dnssecKeys!.update!(zone.origin, (held) =>
          parseDisable(held.disable)?.phase === 'Unsigned' ? { keys: [] } : undefined,
        ),
      );
    }
    const served = this.table.get(zone.origin)!;
    const policy = served.transfers;
    if (policy && policy.notify.length > 0) this.notifier?.notify(served.soa, policy.notify);
    return this.result(
      zone,
      signing && keys ? await this.lifecycle(zone, signing, keys, signedAt) : undefined,
    );
  }

  /**
   * The zone's key lifecycle once its serial is served: the next rollover step when due, recorded in
   * the key store for a time after `signedAt` (dnssec-key-lifecycle.ts), and the status of the keys
   * as this serial uses them. Only where the store takes updates (the signer that owns the keys).
   */
  private async lifecycle(
    zone: ProgrammedZone,
    signing: EffectiveDnssec,
    keys: ZoneKey[],
    signedAt: number,
  ): Promise<Signed> {
    const store = this.dnssecKeys;
    if (!store?.update) {
      const event = nextKeyEvent(keys, signedAt);
      return { keys, signedAt, ...(event !== undefined ? { keyEventAt: event } : {}) };
    }
    const seen = this.parentDs(zone.origin);
    const noted = signing.parentDs;
    const parent =
      seen && noted ? { ds: [...seen.ds, ...noted.ds], ttl: Math.max(seen.ttl, noted.ttl) } : (seen ?? noted);
    if (signing.disable) return this.disabling(zone, keys, signedAt, parent);
    // The largest TTL in the zone (how long any of its signed data may be cached), read only where a
    // rollover step may need it: going insecure does not.
    const soa = zone.soa;
    let largest = Math.max(soa.ttl, soa.minimum);
    for (const r of zone.rrsets()) if (r.ttl > largest) largest = r.ttl;
    let step: LifecycleStep | undefined;
    const stored = await signingStep(
      zone.origin,
      'DNSSEC_ROLLOVER',
      'record the DNSSEC key rollover of',
      () =>
        store.update!(zone.origin, (held) => {
          step = stepKeyLifecycle({
            origin: zone.origin,
            // Keys stored before rollovers were (or a store emptied under us): the keys read.
            held: held.keys.length > 0 ? held : { ...held, keys },
            settings: signing,
            signedAt,
            now: Math.floor(Date.now() / 1000),
            ttls: { dnskey: soa.ttl, largest, propagation: soa.refresh },
            parent,
            generate: generateDnssecKey,
          });
          // Signing turned on again while it was being turned off: normal signing with the same keys,
          // and no state of the turning off left to resume from later.
          if (held.disable === undefined) return step.next;
          const { disable: _, ...rest } = step.next ?? held;
          return rest;
        }),
    );
    const event = nextKeyEvent(stored.keys, signedAt);
    return {
      keys: stored.keys,
      signedAt,
      ...(step?.rollover ? { rollover: step.rollover } : {}),
      ...(event !== undefined ? { keyEventAt: event } : {}),
      ...(step?.dueAt !== undefined ? { revisitAt: step.dueAt } : {}),
    };
  }

  async signingTurnedOff(origin: Name): Promise<boolean> {
    const store = this.dnssecKeys;
    if (!store?.update) return false;
    // A store holding nothing for the zone (a cluster's key Secret not there) has nothing to turn off.
    const held = await store.update(origin, () => undefined).catch(() => undefined);
    const state = parseDisable(held?.disable);
    return held !== undefined && held.keys.length > 0 && state !== undefined && state.phase !== 'Unsigned';
  }

  /**
   * Signing turned off on a signed zone (RFC 8078 §4, dnssec-disable.ts): the zone stays signed with
   * the delete CDS/CDNSKEY until the parent is seen (or recorded) without a DS and its DS TTL has
   * passed; then `status.dnssec.rollover` says Unsigned, and the reconciler serves the zone unsigned.
   */
  private async disabling(
    zone: ProgrammedZone,
    keys: ZoneKey[],
    signedAt: number,
    parent: { ds: string[]; ttl: number } | undefined,
  ): Promise<Signed> {
    const store = this.dnssecKeys!;
    const now = Math.floor(Date.now() / 1000);
    const ds = keysAt(keys, signedAt).parent.map((k) => printRdata(dsOf(zone.origin, k)));
    let step: DisableStep | undefined;
    const stored = await signingStep(zone.origin, 'DNSSEC_ROLLOVER', 'record turning off DNSSEC of', () =>
      store.update!(zone.origin, (held) => {
        step = stepDisable({
          state: parseDisable(held.disable),
          enabled: false,
          hasKeys: true,
          ds,
          parent,
          servedUnsigned: false,
          now,
          propagation: zone.soa.refresh,
        });
        const disable = step.next ? printDisable(step.next) : undefined;
        if (disable === held.disable) return undefined;
        const { disable: _, ...rest } = held.keys.length > 0 ? held : { ...held, keys };
        return disable !== undefined ? { ...rest, disable } : rest;
      }),
    );
    const s = step!;
    const state = s.next;
    const rollover: DnssecStatus['rollover'] | undefined = state && {
      kind: 'Disable',
      phase: state.phase,
      since: new Date(state.since * 1000).toISOString(),
      ...(s.dueAt !== undefined && state.phase !== 'Unsigned'
        ? { nextStep: new Date(s.dueAt * 1000).toISOString() }
        : {}),
      ...(s.waiting ? { reason: s.waiting.reason, message: s.waiting.message } : {}),
    };
    return {
      keys: stored.keys,
      signedAt,
      disable: true,
      ...(rollover ? { rollover } : {}),
      // Unsigned: the reconciler is to come back at once and serve the zone unsigned.
      ...(state?.phase === 'Unsigned'
        ? { revisitAt: now + 1 }
        : s.dueAt !== undefined
          ? { revisitAt: s.dueAt }
          : {}),
    };
  }

  /**
   * The DS RRset of `origin` in its parent when this server serves the parent (Zonekeeper publishes a
   * child's DS there from the child's status): the parent, seen. The closest enclosing zone served
   * here is the parent only when it delegates the child: an NS RRset at exactly the child's origin
   * (RFC 1034 §4.2.1), not below another zone cut of it (a name delegated elsewhere, whose real DS this
   * server does not hold). Anything else is not the parent: undefined, and the flow waits for the
   * parent recorded by a writer (`dns.zonekeeper.dev/parent-ds`).
   */
  private parentDs(origin: Name): { ds: string[]; ttl: number } | undefined {
    const key = nameKey(origin);
    if (key === '.') return undefined;
    const parent = this.table.findZone(stripFirstLabel(key));
    if (!parent) return undefined;
    const cut = parent.node(key);
    if (!cut?.rrsets.has(RRType.NS)) return undefined;
    // Names between the parent's apex and the child: an NS there is a cut the child lies below.
    for (let k = stripFirstLabel(key); k !== parent.originKey; k = stripFirstLabel(k)) {
      if (k === '.') return undefined;
      if (parent.node(k)?.rrsets.has(RRType.NS)) return undefined;
    }
    const rrset = cut.rrsets.get(RRType.DS);
    return { ds: (rrset?.rdata ?? []).map((r) => printRdata(r)), ttl: rrset?.ttl ?? 0 };
  }

  /**
   * What the apply leaves to report: ALIAS record sets this server cannot answer, steered record sets
   * whose health checks were refused; the signing keys.
   */
  private result(zone: ProgrammedZone, signed?: Signed): ApplyResult | undefined {
    const problems = [
      ...(this.aliases?.problems(zone.origin) ?? []),
      ...(this.steering?.problems(zone.origin) ?? []),
    ];
    const dnssec = signed
      ? signedStatus(zone.origin, signed.keys, signed.signedAt, signed.rollover, signed.disable)
      : undefined;
    if (problems.length === 0 && !dnssec) return undefined;
    return {
      ...(problems.length > 0 ? { problems } : {}),
      ...(dnssec ? { dnssec } : {}),
      ...(signed?.keyEventAt !== undefined ? { keyEventAt: signed.keyEventAt } : {}),
      ...(signed?.revisitAt !== undefined ? { revisitAt: signed.revisitAt } : {}),
    };
  }

  async deleteZone(origin: Name): Promise<void> {
    this.keys.delete(nameKey(origin));
    this.signatures.forget(origin);
    this.signingThread?.forget(origin);
    this.steering?.forget(origin);
    if (this.table.delete(origin) && this.aliases) {
      this.aliases.forget(origin);
      this.aliases.servedChanged(origin);
    }
  }

  async servedSerial(origin: Name): Promise<number | undefined> {
    return this.table.get(origin)?.serial;
  }

  /** Answers the zone's bound RRsets through their selection policies from now on (see SelectionSink). */
  async setSelections(origin: Name, bindings: readonly SelectionBinding[]): Promise<void> {
    this.table.setSelections(origin, bindings);
  }
}

/** A signed zone's keys after its apply, for the result. */
interface Signed {
  keys: readonly ZoneKey[];
  signedAt: number;
  rollover?: DnssecStatus['rollover'];
  keyEventAt?: number;
  revisitAt?: number;
  /** Signing is being turned off (RFC 8078 §4). */
  disable?: boolean;
}

/**
 * The RRsets as given, collecting the ALIAS ones into `aliases` and the steered ones into `steered`
 * where given (so a whole zone is read once); one generator for both, not one wrapped in the other
 * (every RRset of every zone passes through it at start).
 */
function tap(
  rrsets: Iterable<RRset>,
  aliases: RRset[] | undefined,
  steered: RRset[] | undefined,
): Iterable<RRset> {
  if (aliases === undefined && steered === undefined) return rrsets;
  return tapped(rrsets, aliases, steered);
}

function* tapped(
  rrsets: Iterable<RRset>,
  aliases: RRset[] | undefined,
  steered: RRset[] | undefined,
): Generator<RRset> {
  for (const rrset of rrsets) {
    if (aliases !== undefined && rrset.type === 'ALIAS') aliases.push(rrset);
    if (steered !== undefined && rrset.steering) steered.push(rrset);
    yield rrset;
  }
}

/**
 * A step of signing a zone; a failure becomes a BackendError the zone's Programmed condition shows
 * (reason BackendRejected, a stable code), and the previous serial stays served until a retry works.
 */
async function signingStep<T>(origin: Name, code: string, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new BackendError(
      'BackendRejected',
      `could not ${what} zone ${origin}: ${message}` +
        (code === 'DNSSEC_KEYS'
          ? ' (check the key file in the state directory: restore it from a backup, or remove it to have new keys made and update the DS at the parent)'
          : ''),
      { code, cause: e },
    );
  }
}
