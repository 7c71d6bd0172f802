import { type Name, nameKey } from '../dns/name.ts';
import { chooseSerial, knownSerial } from '../zones/serial-policy.ts';
import { highestSerial, type ResolvedTransfers, type SoaProbeResult } from '../zones/transfers.ts';
import type { Log } from './queues.ts';
import { type SerialStore, SerialTakenError, type ZoneSerialState } from './serial-store.ts';
import type { AssignedSerial, ZoneModelState } from './zone-state.ts';

/** A serial store write failed: the change is not served until it succeeds. */
export class SerialNotSavedError extends Error {
  override readonly name = 'SerialNotSavedError';
}

export interface SerialAssignerOptions {
  serials: SerialStore;
  now: () => Date;
  log: Log;
  /** Compute the content hash with each new serial instead of shortly after it. */
  hashOnChange: boolean;
  /** Asks a zone's secondaries which SOA serial they serve (used when nothing is stored). */
  secondarySerials?: ((origin: Name, transfers: ResolvedTransfers) => Promise<SoaProbeResult[]>) | undefined;
}

/**
 * The I/O around the serial policy (`zones/serial-policy.ts`): it reads what the serial store and the
 * zone's status know, asks the secondaries when nothing is known, remembers every serial this process
 * asked to save (saved or not) and which origins' last write failed, and saves serials and hashes.
 */
export class SerialAssigner {
  private readonly options: SerialAssignerOptions;
  /** Per zone origin (nameKey): the highest serial this process asked the serial store to save. */
  private readonly claimed = new Map<string, number>();
  /** Zone origins (nameKey) whose last serial store write failed: what the store returns may not be durable. */
  private readonly unsaved = new Set<string>();

  constructor(options: SerialAssignerOptions) {
    this.options = options;
  }

  /**
   * The serial of the model's current content, saved durably: the one already chosen for it (saved
   * again after a failed write), else a new one. A model's first serial keeps the stored one when the
   * stored hash is this content's (a restart or rebuild without changes); any other content gets
   * `max(YYYYMMDD00, last + 1)` above every serial this process asked to save, saved or not, so a
   * serial is never reused for other content even if a failed write did reach the disk.
   */
  async assign(
    origin: Name,
    status: { serial?: number; hash?: string; signedAt?: number; signing?: string } | undefined,
    model: ZoneModelState,
    transfers: ResolvedTransfers | undefined,
    /**
     * For a zone its backend signs at the serial (ADR 0021): the signing settings, and whether
     * signatures made at a signing time are due for refresh now (seconds). A serial signed with other
     * settings, or due, is replaced by a new serial with a new signing time.
     */
    signing?: { id: string; resignDue: (signedAt: number, now: number) => boolean },
  ): Promise<AssignedSerial> {
    const id = nameKey(origin);
    const nowSeconds = Math.floor(this.options.now().getTime() / 1000);
    // Signed as asked, at a signing time whose signatures are not due (or not signed, as asked).
    const signedAsAsked = (s: { signing?: string; signedAt?: number } | undefined) =>
      s?.signing === signing?.id &&
      (signing === undefined || (s?.signedAt !== undefined && !signing.resignDue(s.signedAt, nowSeconds)));
    let assigned = model.assigned;
    if (assigned && !signedAsAsked(assigned)) {
      // A re-sign (or signing turned on, off or changed) is a change: a new serial (ADR 0021).
      assigned = undefined;
      model.assigned = undefined;
    }
    if (!assigned) {
      let known = knownSerial(this.options.serials.get(origin), status);
      if (!known && !this.claimed.has(id)) known = await this.fromSecondaries(origin, transfers);
      const now = this.options.now();
      const claimed = this.claimed.get(id);
      const signedFields = (kept: ZoneSerialState | undefined) =>
        signing
          ? { signing: signing.id, signedAt: kept?.signedAt ?? nowSeconds }
          : ({} as { signing?: string; signedAt?: number });
      if (model.firstSerial) {
        // The stored serial is kept only when it was signed (or not) exactly as asked now.
        const stored = withRecordedSigning(this.options.serials.get(origin), status, nowSeconds);
        const keepable =
          !signing && !stored?.signing ? true : stored?.serial === known?.serial && signedAsAsked(stored);
        // The hash decides only whether a known serial with a hash is kept. Without one (a first
        // start, a lost state, a serial read from the secondaries) it is computed and saved later,
        // off the path to the first answer, as after any change (ZoneReconciler, step 3).
        const hash =
          (keepable && known?.hash !== undefined) || this.options.hashOnChange
            ? model.model.contentHash()
            : undefined;
        const choice = chooseSerial({ known, claimed, ...(keepable ? { hash } : {}), now });
        if (!choice.kept) this.claimed.set(id, choice.serial);
        // A serial kept from a store that keeps counts but has none for it (saved by an older version)
        // is saved again with its count: else it would have none across every later restart.
        const countSaved =
          !this.options.serials.keepsCounts ||
          this.options.serials.get(origin)?.rrsets === model.model.rrsetCount;
        assigned = {
          serial: choice.serial,
          ...(hash !== undefined ? { hash } : {}),
          saved: choice.kept && !this.unsaved.has(id) && countSaved,
          rrsets: model.model.rrsetCount,
          ...signedFields(choice.kept ? stored : undefined),
        };
      } else {
        const { serial } = chooseSerial({ known, claimed, now });
        this.claimed.set(id, serial);
        const rrsets = model.model.rrsetCount;
        assigned = this.options.hashOnChange
          ? { serial, hash: model.model.contentHash(), saved: false, rrsets, ...signedFields(undefined) }
          : { serial, saved: false, rrsets, ...signedFields(undefined) };
      }
      model.assigned = assigned;
      model.firstSerial = false;
    }
    if (!assigned.saved) {
      const { serial, hash } = assigned;
      try {
        await this.options.serials.set(origin, {
          serial,
          ...(hash !== undefined ? { hash } : {}),
          ...(assigned.rrsets !== undefined ? { rrsets: assigned.rrsets } : {}),
          ...(assigned.signing !== undefined
            ? { signing: assigned.signing, signedAt: assigned.signedAt! }
            : {}),
        });
      } catch (e) {
        this.unsaved.add(id);
        // Another writer recorded this serial or a higher one (a leader handover): it may be served
        // with other content, so the retry chooses a new serial above what the store holds now.
        if (e instanceof SerialTakenError) model.assigned = undefined;
        throw new SerialNotSavedError(errorText(e), { cause: e });
      }
      this.unsaved.delete(id);
      assigned.saved = true;
    }
    return assigned;
  }

  /**
   * The RRsets last served for the zone before this process started: its status's count (written
   * with the serial it was served at), else the count saved with the stored serial (folder mode,
   * whose statuses are not kept); undefined when neither knows (a first start).
   */
  servedRRsets(origin: Name, status: { rrsetCount?: number } | undefined): number | undefined {
    return status?.rrsetCount ?? this.options.serials.get(origin)?.rrsets;
  }

  /** Saves the content hash of a served serial (it is then known which content the serial has). */
  async saveHash(origin: Name, serial: number, hash: string): Promise<void> {
    // The signing time recorded with the serial stays with it.
    const stored = this.options.serials.get(origin);
    const signed =
      stored?.serial === serial && stored.signing !== undefined
        ? { signing: stored.signing, signedAt: stored.signedAt! }
        : {};
    // So does its RRset count (change safety after a restart).
    const rrsets = stored?.serial === serial && stored.rrsets !== undefined ? { rrsets: stored.rrsets } : {};
    try {
      await this.options.serials.set(origin, { serial, hash, ...signed, ...rrsets });
    } catch (e) {
      this.unsaved.add(nameKey(origin));
      throw e;
    }
    this.unsaved.delete(nameKey(origin));
  }

  /**
   * Nothing is stored for the zone: the highest serial its secondaries answer, so that the first
   * serial starts above it (as if it had been stored), or undefined (the date serial then).
   */
  /**
   * Saves the content hashes still pending after recent changes (a graceful shutdown), so that a
   * restart keeps serials exactly. A hash is saved only with the serial chosen for the same content.
   */
  async flush(models: Iterable<[string, ZoneModelState]>): Promise<void> {
    for (const [key, state] of models) {
      const assigned = state.assigned;
      if (!assigned?.saved || assigned.hash !== undefined) continue;
      const hash = state.model.contentHash();
      try {
        await this.options.serials.set(state.model.origin, {
          serial: assigned.serial,
          hash,
          ...(assigned.rrsets !== undefined ? { rrsets: assigned.rrsets } : {}),
          ...(assigned.signing !== undefined
            ? { signing: assigned.signing, signedAt: assigned.signedAt! }
            : {}),
        });
        assigned.hash = hash;
      } catch (e) {
        this.options.log(
          'warn',
          `zone ${key}: the content hash could not be saved; the next start raises the serial`,
          {
            error: errorText(e),
          },
        );
      }
    }
  }

  private async fromSecondaries(
    origin: Name,
    transfers: ResolvedTransfers | undefined,
  ): Promise<ZoneSerialState | undefined> {
    const probe = this.options.secondarySerials;
    if (!probe || !transfers || transfers.notify.length === 0) return undefined;
    let results: SoaProbeResult[];
    try {
      results = await probe(origin, transfers);
    } catch (e) {
      results = [{ target: 'secondaries', error: errorText(e) }];
    }
    const highest = highestSerial(results);
    const answers = results.map((r) => `${r.target}: ${r.serial ?? r.error}`).join(', ');
    this.options.log(
      'warn',
      highest !== undefined
        ? `zone ${origin}: no serial stored; its secondaries serve up to ${highest}, so it starts above that`
        : `zone ${origin}: no serial stored and no secondary answered its SOA; it starts at the date serial, ` +
            'and a secondary that holds a higher serial ignores it until the serial passes that one',
      { secondaries: answers },
    );
    return highest !== undefined ? { serial: highest } : undefined;
  }
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * A serial store that keeps no signing times (the cluster's serial records) takes the one the zone's
 * status recorded for the same serial and content (ADR 0021), so a restart or a leader handover keeps
 * an unchanged signed zone at its serial. A signing time in the future is not taken (it would make
 * signatures not valid yet).
 */
function withRecordedSigning(
  stored: ZoneSerialState | undefined,
  status: { serial?: number; hash?: string; signedAt?: number; signing?: string } | undefined,
  nowSeconds: number,
): ZoneSerialState | undefined {
  if (!stored || stored.signing !== undefined || !status) return stored;
  const { serial, hash, signedAt, signing } = status;
  if (serial !== stored.serial || hash === undefined || hash !== stored.hash) return stored;
  if (signing === undefined || signedAt === undefined || signedAt > nowSeconds) return stored;
  return { ...stored, signing, signedAt };
}
