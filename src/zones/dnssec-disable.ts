/**
 * Turning signing off without breaking validation (RFC 8078 §4, "delete"), as a pure step function:
 * given the recorded state, whether signing is wanted, the DS RRset the parent is seen to publish (or
 * the one the operator recorded), the time and the intervals, what the zone serves now and the next
 * state. The backend that holds the keys records the state and carries it out.
 *
 * Signed ──enabled: false──▶ Disabling: still signed; CDS `0 0 0 00` and CDNSKEY `0 3 0 AA==` replace the
 *   normal CDS/CDNSKEY (RFC 8078 §4); waits, with no timeout, until the parent is seen (or recorded)
 *   without a DS for the zone ──▶ DsPropagate: still signed, the parent's DS TTL + propagation, so no
 *   cache holds the DS ──▶ Unsigned: the zone is served unsigned (a new serial) ──served──▶ the keys
 *   are removed, no state.
 *
 * Re-enabling during Disabling or DsPropagate returns to normal signing with the same keys (no state). A
 * parent that is seen holding a DS again during DsPropagate sends the step back to Disabling: the wait is
 * counted from the last time a DS could have been fetched.
 */

/** How long a resolver may cache the parent's DS when nothing says otherwise (a day). */
export const DEFAULT_DS_TTL_SECONDS = 86400;

export type DisableState =
  /** `dsTtl`: the largest TTL the parent's DS was seen or recorded with (0: never). */
  | { phase: 'Disabling'; since: number; dsTtl: number }
  /** `wait`: seconds from `since` until no cache may hold the parent's DS. */
  | { phase: 'DsPropagate'; since: number; wait: number }
  | { phase: 'Unsigned'; since: number };

export type DisablePhase = DisableState['phase'];

export interface DisableStep {
  next: DisableState | undefined;
  /** Whether the serial to serve now is signed. */
  signed: boolean;
  /** What the apex publishes for the parent: the DS set of the keys, the RFC 8078 §4 delete, nothing. */
  cds: 'keys' | 'delete' | 'none';
  /** Remove the zone's keys now (only once the unsigned serial is served). */
  removeKeys: boolean;
  /** When the next step is due (seconds); undefined: not before something outside changes. */
  dueAt: number | undefined;
  /** Set while the step waits for the parent: a stable reason and what the operator must do. */
  waiting?: { reason: 'ParentDsNotRemoved'; message: string };
}

export interface DisableInput {
  state: DisableState | undefined;
  /** `spec.dnssec.enabled` as the zone's settings resolve it. */
  enabled: boolean;
  /** Whether the zone has signing keys (a zone never signed has nothing to wind down). */
  hasKeys: boolean;
  /** The DS records the zone's keys give the parent (presentation form), for the message. */
  ds: readonly string[];
  /** The DS RRset the parent is seen to publish for the zone, or the recorded one; undefined: unknown. */
  parent: { ds: readonly string[]; ttl: number } | undefined;
  /** Whether the serial served now is unsigned (the Unsigned phase reached the servers). */
  servedUnsigned: boolean;
  /** Seconds since the epoch. */
  now: number;
  /** The propagation delay to secondaries (the SOA refresh), seconds. */
  propagation: number;
}

/** One step (see the module comment). */
export function stepDisable(input: DisableInput): DisableStep {
  const { state, enabled, hasKeys, parent, now, propagation } = input;
  const signedNormally: DisableStep = {
    next: undefined,
    signed: hasKeys,
    cds: hasKeys ? 'keys' : 'none',
    removeKeys: false,
    dueAt: undefined,
  };
  if (enabled) {
    // Back to normal signing with the keys held. Once the unsigned serial was served, the keys are
    // gone or going: the zone is signed anew (new keys, a new DS for the parent), as any zone enabled.
    if (state?.phase === 'Unsigned')
      return { ...signedNormally, removeKeys: hasKeys && input.servedUnsigned };
    return signedNormally;
  }
  if (!hasKeys) return { next: undefined, signed: false, cds: 'none', removeKeys: false, dueAt: undefined };
  const held = parent !== undefined && parent.ds.length > 0;
  switch (state?.phase) {
    case undefined:
    case 'Disabling': {
      const since = state?.since ?? now;
      const dsTtl = Math.max(state?.dsTtl ?? 0, held ? parent.ttl : 0);
      if (parent !== undefined && !held) {
        // RFC 8078 §4: the parent dropped the DS; resolvers may still hold it for its TTL. The TTL is
        // the largest one seen or recorded; a parent seen only without a DS gives no TTL, so a day.
        const ttl = Math.max(dsTtl, parent.ttl) || DEFAULT_DS_TTL_SECONDS;
        const wait = ttl + propagation;
        return {
          next: { phase: 'DsPropagate', since: now, wait },
          signed: true,
          cds: 'delete',
          removeKeys: false,
          dueAt: now + wait,
        };
      }
      const what = parent === undefined ? input.ds : parent.ds;
      return {
        next: { phase: 'Disabling', since, dsTtl },
        signed: true,
        cds: 'delete',
        removeKeys: false,
        // A parent seen is looked at again after the propagation delay; a recorded one when it changes.
        dueAt: parent === undefined ? undefined : now + Math.max(1, propagation),
        waiting: {
          reason: 'ParentDsNotRemoved',
          message:
            parent === undefined
              ? `turning DNSSEC off waits for the parent: remove the DS ${what.join(', ') || 'of the zone'} at the ` +
                'parent (registrar), then record it with the annotation dns.zonekeeper.dev/parent-ds: none ' +
                '(optionally "none; ttl=<the parent\'s DS TTL>"); the zone stays signed and publishes the ' +
                'delete CDS/CDNSKEY (RFC 8078 §4) until then'
              : `turning DNSSEC off waits for the parent to remove the DS ${what.join(', ')}; the zone stays ` +
                'signed and publishes the delete CDS/CDNSKEY (RFC 8078 §4) until then',
        },
      };
    }
    case 'DsPropagate':
      if (held)
        // The parent holds a DS again: start over, counting its TTL from when it is gone.
        return stepDisable({
          ...input,
          state: { phase: 'Disabling', since: now, dsTtl: Math.max(parent.ttl, state.wait - propagation) },
        });
      if (now - state.since < state.wait)
        return {
          next: state,
          signed: true,
          cds: 'delete',
          removeKeys: false,
          dueAt: state.since + state.wait,
        };
      return {
        next: { phase: 'Unsigned', since: now },
        signed: false,
        cds: 'none',
        removeKeys: false,
        dueAt: now,
      };
    case 'Unsigned':
      // The keys go only once the unsigned serial is what is served: until then a server may still
      // sign the previous serial with them.
      if (!input.servedUnsigned)
        return { next: state, signed: false, cds: 'none', removeKeys: false, dueAt: undefined };
      return { next: undefined, signed: false, cds: 'none', removeKeys: true, dueAt: undefined };
  }
}

/** `Disabling <since> <dsTtl>`, `DsPropagate <since> <wait>` or `Unsigned <since>` (one metadata string). */
export function printDisable(s: DisableState): string {
  if (s.phase === 'Disabling') return `Disabling ${s.since} ${s.dsTtl}`;
  if (s.phase === 'DsPropagate') return `DsPropagate ${s.since} ${s.wait}`;
  return `Unsigned ${s.since}`;
}

export function parseDisable(text: string | undefined): DisableState | undefined {
  const [phase, a, b] = (text ?? '').trim().split(/\s+/);
  const n = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const since = n(a);
  if (since === undefined) return undefined;
  if (phase === 'Disabling' && n(b) !== undefined) return { phase, since, dsTtl: n(b)! };
  if (phase === 'DsPropagate' && n(b) !== undefined) return { phase, since, wait: n(b)! };
  if (phase === 'Unsigned' && b === undefined) return { phase, since };
  return undefined;
}
