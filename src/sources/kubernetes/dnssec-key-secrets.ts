/**
 * DNSSEC keys of the built-in server in a cluster (ADR 0021): one Secret per zone origin in the key
 * namespace (`--dnssec-key-namespace`; the chart's default holds nothing else), named from a digest of the origin (`zonekeeper-dnssec-<24 hex>`), labelled
 * `dns.zonekeeper.dev/dnssec-keys: "true"`, the origin in an annotation, the keys in `keys.json` (the
 * key file format of `zonekeeper serve`). Tenants hold no right in that namespace, so they can neither
 * read a zone's private keys nor plant keys of their own; the keys follow the domain, not the
 * DNSZone object, so a zone deleted and created again keeps the DS its parent holds.
 *
 * The operator's leader creates them (create-only: a second writer reads the first one's) before the
 * first signed serial is recorded; `zonekeeper server` replicas only read them (GET by name, at each
 * apply: never cached, so replaced keys are read before the next serial is signed). A
 * replica whose keys are not there (yet) fails the apply: it keeps serving the serial it has.
 */
import { createHash } from 'node:crypto';
import type { EffectiveDnssec } from '../../api/dnssec.ts';
import { generateDnssecKey } from '../../dns/dnssec/keys.ts';
import type { Name } from '../../dns/name.ts';
import {
  type DnssecKeyStore,
  decodeKeySet,
  encodeKeyFile,
  generateZoneKeys,
  type KeySetState,
  keysMatch,
  type ZoneKey,
} from '../../zones/dnssec-key-set.ts';
import { isStatus, type KubeApi } from './kube-api.ts';

export const DNSSEC_KEYS_LABEL = 'dns.zonekeeper.dev/dnssec-keys';
export const DNSSEC_ORIGIN_ANNOTATION = 'dns.zonekeeper.dev/zone-origin';
const DATA_KEY = 'keys.json';

/** The name of a zone origin's key Secret: a digest, so that any origin makes a valid, fixed-length name. */
export function keySecretName(origin: Name): string {
  const digest = createHash('sha256').update(origin.toLowerCase()).digest('hex').slice(0, 24);
  return `zonekeeper-dnssec-${digest}`;
}

export interface SecretKeyStoreOptions {
  api: Pick<KubeApi, 'readSecret' | 'writeSecret'>;
  /** The key namespace (`--dnssec-key-namespace`, by default the operator's own). */
  namespace: string;
  /** The operator's leader: creates missing keys (or a key set that cannot sign) and records rollover steps. Replicas only read. */
  create: boolean;
  log?: (level: 'info' | 'warn', message: string) => void;
  /**
   * How long the leader believes a zone's key Secret is not there once a read found none (default
   * 60 s; see `SecretKeyStore.absent`).
   */
  absentTtlMs?: number;
  /** The clock of `absentTtlMs` (ms). */
  now?: () => number;
}

/** How long an absent key Secret is believed absent, by default. */
export const ABSENT_KEYS_TTL_MS = 60_000;

export class SecretKeyStore implements DnssecKeyStore {
  private readonly o: SecretKeyStoreOptions;
  private readonly held = new Map<string, ZoneKey[]>();
  /**
   * Zone origins whose key Secret a read found missing, with until when (ms) the leader believes it:
   * most zones are never signed, and every visit to one before its status shows a serial asks whether
   * signing was being turned off there (`BuiltinBackend.signingTurnedOff`), a GET each. Forgotten at
   * once when this store writes or reads the Secret. Secrets are never listed or watched (RBAC names
   * just the ones read), so nothing reports one that another writer makes (a leader before this one,
   * a restore from a backup): a read after `absentTtlMs` sees it. Oldest first, so expired entries are
   * dropped from the front.
   */
  private readonly absent = new Map<string, number>();

  /** The leader records rollover steps; replicas only read (no `update`). */
  readonly update?: (
    origin: Name,
    step: (held: KeySetState) => KeySetState | undefined,
  ) => Promise<KeySetState>;

  constructor(options: SecretKeyStoreOptions) {
    this.o = options;
    if (options.create) this.update = (origin, step) => this.step(origin, step);
  }

  /**
   * A rollover step of the leader: the Secret read, `step` run on its key set, the result written
   * conditionally on the version read (a conflict reads again and steps again, once).
   */
  private async step(
    origin: Name,
    step: (held: KeySetState) => KeySetState | undefined,
    attempt = 0,
  ): Promise<KeySetState> {
    const { api, namespace } = this.o;
    const id = origin.toLowerCase();
    const name = keySecretName(origin);
    const where = `Secret ${namespace}/${name}`;
    const missing = () => new Error(`no DNSSEC keys in ${where} to roll over`);
    if (this.believedAbsent(id)) throw missing();
    const secret = await this.read(name, where);
    if (!secret) {
      this.noteAbsent(id);
      throw missing();
    }
    this.absent.delete(id);
    const held = this.decodeSet(secret.data[DATA_KEY], origin, where);
    const next = step(held);
    if (!next) return held;
    try {
      await api.writeSecret(namespace, {
        ...secret,
        data: { ...secret.data, [DATA_KEY]: encodeKeyFile(origin, next.keys, next) },
      });
    } catch (e) {
      if (!isStatus(e, 409) || attempt > 0) throw e;
      return this.step(origin, step, attempt + 1);
    }
    this.held.set(id, next.keys);
    return next;
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  /** Whether a read found the zone's Secret missing within `absentTtlMs`. */
  private believedAbsent(id: string): boolean {
    const until = this.absent.get(id);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.absent.delete(id);
    return false;
  }

  private noteAbsent(id: string): void {
    const now = this.now();
    this.absent.delete(id);
    this.absent.set(id, now + (this.o.absentTtlMs ?? ABSENT_KEYS_TTL_MS));
    for (const [other, until] of this.absent) {
      if (until > now) break;
      this.absent.delete(other);
    }
  }

  async keysFor(origin: Name, settings: EffectiveDnssec): Promise<ZoneKey[]> {
    const id = origin.toLowerCase();
    // The leader keeps what it stored; a replica reads the Secret at every apply (one GET per new
    // serial), so the keys and rollover steps the leader stored are the ones it signs the next serial with.
    const cached = this.o.create ? this.held.get(id) : undefined;
    if (cached && keysMatch(cached, settings)) return cached;
    const { api, namespace } = this.o;
    const name = keySecretName(origin);
    const where = `Secret ${namespace}/${name}`;
    let secret = await this.read(name, where);
    if (secret) this.absent.delete(id);
    const stored = secret ? this.decode(secret.data[DATA_KEY], origin, where) : undefined;
    if (stored && keysMatch(stored, settings)) {
      this.held.set(id, stored);
      return stored;
    }
    if (!this.o.create)
      throw new Error(
        stored
          ? `the DNSSEC keys in ${where} are not ${settings.algorithm}/${settings.keys} yet (the operator's leader replaces them)`
          : `no DNSSEC keys in ${where} yet (the operator's leader creates them; check that it runs and may create Secrets there)`,
      );
    if (stored)
      this.o.log?.(
        'warn',
        `zone ${origin}: the DNSSEC keys in ${where} do not match ${settings.algorithm}/${settings.keys}; new keys replace them ` +
          '(update the DS at the parent: validating resolvers fail the zone until it matches)',
      );
    const made = generateZoneKeys(settings, generateDnssecKey);
    try {
      await api.writeSecret(namespace, {
        name,
        labels: { [DNSSEC_KEYS_LABEL]: 'true', 'app.kubernetes.io/managed-by': 'zonekeeper' },
        annotations: { [DNSSEC_ORIGIN_ANNOTATION]: id },
        data: { [DATA_KEY]: encodeKeyFile(origin, made) },
        ...(secret?.resourceVersion ? { resourceVersion: secret.resourceVersion } : {}),
      });
    } catch (e) {
      // Another writer (a previous leader) stored keys first: theirs are the zone's keys.
      if (!isStatus(e, 409)) throw e;
      secret = await this.read(name, where);
      const theirs = secret ? this.decode(secret.data[DATA_KEY], origin, where) : undefined;
      if (!theirs || !keysMatch(theirs, settings))
        throw new Error(`${where} changed while being written; retrying`);
      this.absent.delete(id);
      this.held.set(id, theirs);
      return theirs;
    }
    this.absent.delete(id);
    this.held.set(id, made);
    this.o.log?.('info', `zone ${origin}: DNSSEC keys generated and stored in ${where}`);
    return made;
  }

  private async read(name: string, where: string) {
    try {
      return await this.o.api.readSecret(this.o.namespace, name);
    } catch (e) {
      if (isStatus(e, 403))
        throw new Error(
          `may not read ${where}: grant get on Secrets in ${this.o.namespace} (the chart does)`,
        );
      throw e;
    }
  }

  private decode(text: string | undefined, origin: Name, where: string): ZoneKey[] {
    return this.decodeSet(text, origin, where).keys;
  }

  private decodeSet(text: string | undefined, origin: Name, where: string): KeySetState {
    if (text === undefined) throw new Error(`${where} has no ${DATA_KEY}`);
    const set = decodeKeySet(text);
    const of = (JSON.parse(text) as { origin?: string }).origin;
    // A Secret copied from another zone would sign with keys whose DS is that zone's: refused.
    if (of !== origin.toLowerCase()) throw new Error(`${where} holds the keys of ${of}, not of ${origin}`);
    return set;
  }
}
