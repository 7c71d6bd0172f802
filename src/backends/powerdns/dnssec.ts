/**
 * DNSSEC of a PowerDNS zone through its HTTP API: PowerDNS signs live from the keys it holds
 * (cryptokeys), with NSEC or NSEC3 (the zone's NSEC3PARAM), and publishes CDS/CDNSKEY when the zone's
 * PUBLISH-CDS / PUBLISH-CDNSKEY metadata say so. Zonekeeper creates the keys, sets the denial and
 * metadata, and reads the keys back for the zone's status (key tags, DS for the parent).
 *
 * Zonekeeper only ever removes keys of a zone it signed itself (marked with the metadata kind
 * X-ZONEKEEPER-DNSSEC): a zone someone signed by hand stays signed when its DNSZone asks for nothing.
 */
import type { DnssecAlgorithmSetting, DnssecStatus, EffectiveDnssec } from '../../api/index.ts';
import { DNSSEC_ALGORITHM_NAMES } from '../../api/index.ts';
import { DNSSEC_ALGORITHMS, dnskeyRdata, keyTag, parseDnskey } from '../../dns/dnssec/keys.ts';
import { type Name, nameKey, parentName } from '../../dns/name.ts';
import {
  keyRollTimings,
  parseKeyRoll,
  parseRollover,
  printKeyRoll,
  printRollover,
  type RolloverTimings,
  rolloverTimings,
  stepKeyRoll,
  stepRollover,
  type ZoneKey,
} from '../../zones/dnssec-rollover.ts';
import type { PowerDnsClient } from './client.ts';
import { PowerDnsError } from './errors.ts';

export const DNSSEC_METADATA = 'X-ZONEKEEPER-DNSSEC';
/** The automatic ZSK rollover's state (dnssec-rollover.ts), one string. */
export const ROLLOVER_METADATA = 'X-ZONEKEEPER-ROLLOVER';
/** The algorithm and KSK rollovers' state (dnssec-rollover.ts `printKeyRoll`), one string. */
export const KEYROLL_METADATA = 'X-ZONEKEEPER-KEYROLL';
/** RFC 9276 §3.1: no extra iterations, no salt (and no opt-out). */
export const NSEC3PARAM = '1 0 0 -';

/** A cryptokey as PowerDNS lists it (the fields read here). */
export interface Cryptokey {
  id: number;
  keytype: 'ksk' | 'zsk' | 'csk';
  active: boolean;
  published?: boolean;
  dnskey?: string;
  ds?: string[];
  algorithm?: string;
}

interface ZoneDnssecInfo {
  dnssec?: boolean;
  nsec3param?: string;
  api_rectify?: boolean;
}

/** The key types a setting needs: one CSK, or a KSK and a ZSK. */
function wantedKeyTypes(want: EffectiveDnssec): ('csk' | 'ksk' | 'zsk')[] {
  return want.keys === 'Split' ? ['ksk', 'zsk'] : ['csk'];
}

/** PowerDNS spells algorithms in lowercase or as IANA mnemonics depending on the version. */
function sameAlgorithm(a: string | undefined, b: string): boolean {
  return (a ?? '').replace(/[^a-z0-9]/gi, '').toLowerCase() === b.replace(/[^a-z0-9]/gi, '').toLowerCase();
}

export interface DnssecApplied {
  status?: DnssecStatus;
  /** When the next rollover step is due (seconds since the epoch). */
  dueAt?: number;
  requests: number;
  /** Whether anything was changed (keys, denial, metadata). */
  changed: boolean;
}

/** Brings the zone's DNSSEC to `want` (undefined: not signed by Zonekeeper) and reads its state back. */
export async function applyDnssec(
  client: PowerDnsClient,
  origin: Name,
  want: EffectiveDnssec | undefined,
  /** The rollovers' timings (seconds) and the time now (seconds since the epoch). */
  rollover?: { timings: RolloverTimings; now: number },
): Promise<DnssecApplied> {
  let requests = 0;
  let changed = false;
  const call = async <T>(method: string, rest: string, what: string, body?: unknown, expect?: number[]) => {
    requests++;
    const response = await client.request(method, client.zonePath(origin, rest), `${what} of ${origin}`, {
      ...(body !== undefined ? { body } : {}),
      ...(expect ? { expect } : {}),
    });
    return {
      status: response.status,
      value: response.body ? (client.parse<T>(response, what) as T) : undefined,
    };
  };
  const marked = await call<{ metadata?: string[] }>(
    'GET',
    `/metadata/${DNSSEC_METADATA}`,
    `GET metadata ${DNSSEC_METADATA}`,
    undefined,
    [404, 422],
  );
  const mark = marked.status === 200 ? (marked.value?.metadata ?? []) : [];
  const managed = mark.length > 0;
  if (want === undefined && !managed) return { requests, changed };
  // The ids of the keys Zonekeeper created ("key:<id>"): the only keys it ever deactivates or deletes.
  const ours = new Set(mark.filter((m) => m.startsWith('key:')).map((m) => Number(m.slice(4))));
  const saveMark = async () => {
    await call('PUT', `/metadata/${DNSSEC_METADATA}`, `PUT metadata ${DNSSEC_METADATA}`, {
      kind: DNSSEC_METADATA,
      metadata: ['managed', ...[...ours].sort((a, b) => a - b).map((id) => `key:${id}`)],
    });
  };

  const readMeta = async (kind: string) => {
    const held = await call<{ metadata?: string[] }>(
      'GET',
      `/metadata/${kind}`,
      `GET metadata ${kind}`,
      undefined,
      [404, 422],
    );
    return held.status === 200 ? held.value?.metadata?.[0] : undefined;
  };
  const putMeta = (kind: string, value: string) =>
    call('PUT', `/metadata/${kind}`, `PUT metadata ${kind}`, { kind, metadata: [value] });

  /**
   * The DS RRset of the zone in its parent, when the parent is a zone of the same PowerDNS server (one
   * Zonekeeper manages publishes the child's status DS there): the closest enclosing zone it holds.
   */
  const parentDs = async (): Promise<{ ds: string[]; ttl: number } | undefined> => {
    for (let name = parentName(origin); name !== '.'; name = parentName(name)) {
      requests++;
      const found = await client.request(
        'GET',
        client.zonePath(name, `?rrset_name=${encodeURIComponent(origin)}&rrset_type=DS`),
        `GET zone ${name} (parent of ${origin})`,
        { expect: [404, 422] },
      );
      if (found.status !== 200) continue;
      const held = client.parse<{
        rrsets?: {
          name: string;
          type: string;
          ttl: number;
          records?: { content: string; disabled?: boolean }[];
        }[];
      }>(found, `GET zone ${name}`);
      const rrset = held.rrsets?.find((r) => r.type === 'DS' && nameKey(r.name) === nameKey(origin));
      return {
        ds: (rrset?.records ?? []).filter((r) => !r.disabled).map((r) => r.content),
        ttl: rrset?.ttl ?? 0,
      };
    }
    return undefined;
  };

  let keys = (await call<Cryptokey[]>('GET', '/cryptokeys', 'GET cryptokeys')).value ?? [];
  const zone = (await call<ZoneDnssecInfo>('GET', '?rrsets=false', 'GET zone')).value ?? {};

  if (want === undefined) {
    // Zonekeeper signed it and no longer should: its keys, NSEC3PARAM, CDS metadata and the mark go.
    for (const k of keys) {
      if (!ours.has(k.id)) continue;
      await call('DELETE', `/cryptokeys/${k.id}`, `DELETE cryptokey ${k.id}`, undefined, [404]);
    }
    if (zone.nsec3param) await call('PUT', '', 'PUT zone', { nsec3param: '', nsec3narrow: false });
    for (const kind of [
      'PUBLISH-CDS',
      'PUBLISH-CDNSKEY',
      ROLLOVER_METADATA,
      KEYROLL_METADATA,
      DNSSEC_METADATA,
    ])
      await call('DELETE', `/metadata/${kind}`, `DELETE metadata ${kind}`, undefined, [404, 422]);
    await call('PUT', '/rectify', 'PUT rectify', undefined, [422]);
    return { requests, changed: true };
  }

  // A zone signed by hand is not taken over: its keys are someone else's, and turning DNSSEC off later
  // must not delete them.
  if (!managed && keys.length > 0)
    throw new PowerDnsError(
      'PDNS_DNSSEC',
      `${origin} is already signed in PowerDNS at ${client.url} with keys Zonekeeper did not create ` +
        `(ids ${keys.map((k) => k.id).join(', ')}); Zonekeeper does not take over DNSSEC of a zone signed by ` +
        'hand: leave spec.dnssec unset, or remove those keys in PowerDNS (pdnsutil remove-zone-key) first',
    );
  // Marked first: a failure after this point leaves a zone Zonekeeper knows it manages.
  if (!managed) {
    await saveMark();
    changed = true;
  }
  /** A new key of the zone, recorded as Zonekeeper's; a PowerDNS refusing keys says what to enable. */
  const createKey = async (
    keytype: 'csk' | 'ksk' | 'zsk',
    algorithm: DnssecAlgorithmSetting,
    active: boolean,
    published: boolean,
  ): Promise<Cryptokey> => {
    const created = await call<Cryptokey & { error?: string }>(
      'POST',
      '/cryptokeys',
      `POST cryptokey ${keytype}`,
      { keytype, active, published, algorithm: algorithm.toLowerCase() },
      [422],
    );
    if (created.status === 422 || created.value === undefined)
      throw new PowerDnsError(
        'PDNS_DNSSEC',
        `PowerDNS at ${client.url} refused to add a ${algorithm} ${keytype.toUpperCase()} to ${origin}: ` +
          `${created.value?.error ?? 'no reason given'}. Enable DNSSEC in its backend (gsqlite3-dnssec=yes, ` +
          'gpgsql-dnssec=yes or gmysql-dnssec=yes; LMDB always has it) and check the algorithm is supported.',
        { status: 422, ...(created.value?.error ? { detail: created.value.error } : {}) },
      );
    keys.push(created.value);
    ours.add(created.value.id);
    await saveMark();
    changed = true;
    return created.value;
  };
  // Keys are created here only for a zone on the wanted algorithm (a new zone, or one gaining a role);
  // another algorithm is reached by the algorithm rollover below (RFC 6781 §4.1.4), never by a switch.
  const onAlgorithm = keys.every((k) => !ours.has(k.id) || sameAlgorithm(k.algorithm, want.algorithm));
  const heldRoll = await readMeta(KEYROLL_METADATA);
  const rollPhase = parseKeyRoll(heldRoll)?.phase;
  if (onAlgorithm && (rollPhase === undefined || rollPhase === 'Idle'))
    for (const keytype of wantedKeyTypes(want)) {
      const have = keys.some(
        (k) => k.active && k.keytype === keytype && sameAlgorithm(k.algorithm, want.algorithm),
      );
      if (!have) await createKey(keytype, want.algorithm, true, true);
    }
  const nsec3param = want.denial === 'NSEC3' ? NSEC3PARAM : '';
  const settings: Record<string, unknown> = {};
  if ((zone.nsec3param ?? '') !== nsec3param) Object.assign(settings, { nsec3param, nsec3narrow: false });
  // Every later change through the API rectifies the zone (ordername, auth flags) by itself.
  if (zone.api_rectify !== true) settings.api_rectify = true;
  if (Object.keys(settings).length > 0) {
    await call('PUT', '', 'PUT zone', settings);
    changed = true;
  }
  for (const [kind, value] of [
    ['PUBLISH-CDS', '2'],
    ['PUBLISH-CDNSKEY', '1'],
  ] as const) {
    const held = await call<{ metadata?: string[] }>(
      'GET',
      `/metadata/${kind}`,
      `GET metadata ${kind}`,
      undefined,
      [404, 422],
    );
    if (held.value?.metadata?.[0] === value) continue;
    await call('PUT', `/metadata/${kind}`, `PUT metadata ${kind}`, { kind, metadata: [value] });
    changed = true;
  }
  // The algorithm and KSK rollovers (dnssec-rollover.ts), one step per call when due; the ZSK's
  // pre-publication rollover runs only while neither is in progress.
  const timings = rollover?.timings ?? rolloverTimings(0, 0, 0, 0);
  const now = rollover?.now ?? Math.floor(Date.now() / 1000);
  const zoneKeys = (): ZoneKey[] =>
    keys
      .filter((k) => ours.has(k.id) && k.dnskey !== undefined)
      .map((k) => ({
        id: k.id,
        role: k.keytype,
        algorithm: parseDnskey(k.dnskey!).algorithm,
        active: k.active,
        published: k.published !== false,
        ds: (k.ds ?? []).filter((d) => d.trim().split(/\s+/)[2] === '2').map((d) => d.trim().toLowerCase()),
      }));
  const recordedRoll = parseKeyRoll(heldRoll);
  // The parent's DS is looked at only while a rollover may need it changed.
  // Either source showing the new DS is enough: the parent zone on this server, or the annotation.
  let parent: { ds: string[]; ttl: number } | undefined;
  if (recordedRoll?.phase === 'Publish' || recordedRoll?.phase === 'DsChange') {
    const seen = await parentDs();
    const noted = want.parentDs;
    parent =
      seen && noted ? { ds: [...seen.ds, ...noted.ds], ttl: Math.max(seen.ttl, noted.ttl) } : (seen ?? noted);
  }
  const rollStep = stepKeyRoll(
    recordedRoll,
    zoneKeys(),
    {
      algorithm: DNSSEC_ALGORITHMS[want.algorithm],
      split: want.keys === 'Split',
      kskLifetime: want.keys === 'Split' ? want.kskLifetimeSeconds : 0,
    },
    parent,
    now,
    keyRollTimings(
      timings.publish - timings.propagation,
      timings.retire - timings.propagation,
      timings.propagation,
    ),
  );
  let roll = rollStep.next;
  for (const action of rollStep.actions) {
    changed = true;
    if (action.kind === 'create') {
      const created = await createKey(
        action.role,
        algorithmSetting(action.algorithm),
        action.active,
        action.published,
      );
      if (roll.phase !== 'Idle') roll = { ...roll, newKeys: [...roll.newKeys, created.id] };
    } else if (action.kind === 'remove') {
      await call('DELETE', `/cryptokeys/${action.key}`, `DELETE cryptokey ${action.key}`, undefined, [404]);
      ours.delete(action.key);
      await saveMark();
    } else {
      await call('PUT', `/cryptokeys/${action.key}`, `PUT cryptokey ${action.key}`, {
        active: action.active,
        published: action.published,
      });
    }
  }
  if (printKeyRoll(roll) !== heldRoll) await putMeta(KEYROLL_METADATA, printKeyRoll(roll));
  if (rollStep.actions.length > 0)
    keys = (await call<Cryptokey[]>('GET', '/cryptokeys', 'GET cryptokeys')).value ?? [];
  let rolled: DnssecStatus['rollover'];
  let dueAt = rollStep.dueAt;
  if (roll.phase !== 'Idle') {
    rolled = {
      kind: roll.kind,
      phase: roll.phase,
      since: new Date(roll.since * 1000).toISOString(),
      ...(rollStep.dueAt !== undefined ? { nextStep: new Date(rollStep.dueAt * 1000).toISOString() } : {}),
      ...(rollStep.waiting ? { reason: rollStep.waiting.reason, message: rollStep.waiting.message } : {}),
    };
  } else if (want.keys === 'Split' && want.zskLifetimeSeconds > 0 && rollover) {
    // Keys: Split rolls its ZSK by pre-publication (RFC 7583 §3.2.1).
    const zsks = keys.filter(
      (k) => k.keytype === 'zsk' && sameAlgorithm(k.algorithm, want.algorithm) && ours.has(k.id),
    );
    const recorded = await readMeta(ROLLOVER_METADATA);
    const step = stepRollover(
      parseRollover(recorded),
      zsks.find((k) => k.active)?.id,
      new Set(zsks.map((k) => k.id)),
      rollover.now,
      rollover.timings,
    );
    let next = step.next;
    for (const action of step.actions) {
      changed = true;
      if (action.kind === 'create-published') {
        if (next?.phase !== 'Publish')
          throw new PowerDnsError('PDNS_DNSSEC', `the ZSK rollover of ${origin} lost its state`);
        const created = await createKey('zsk', want.algorithm, false, true);
        next = { ...next, newKey: created.id };
      } else if (action.kind === 'remove') {
        await call('DELETE', `/cryptokeys/${action.key}`, `DELETE cryptokey ${action.key}`, undefined, [404]);
        ours.delete(action.key);
        await saveMark();
      } else {
        await call('PUT', `/cryptokeys/${action.key}`, `PUT cryptokey ${action.key}`, {
          active: action.kind === 'activate',
          published: true,
        });
      }
    }
    if (next && printRollover(next) !== recorded) await putMeta(ROLLOVER_METADATA, printRollover(next));
    if (step.actions.length > 0)
      keys = (await call<Cryptokey[]>('GET', '/cryptokeys', 'GET cryptokeys')).value ?? [];
    if (next)
      rolled = {
        kind: 'ZSK',
        phase: next.phase,
        since: new Date(next.since * 1000).toISOString(),
        nextStep: new Date(step.dueAt * 1000).toISOString(),
      };
    dueAt = dueAt === undefined ? step.dueAt : Math.min(dueAt, step.dueAt);
  }
  if (changed) await call('PUT', '/rectify', 'PUT rectify');
  return {
    requests,
    changed,
    status: { ...statusOf(keys, rollStep.ds), ...(rolled ? { rollover: rolled } : {}) },
    ...(dueAt !== undefined ? { dueAt } : {}),
  };
}

/**
 * Keys and DS (SHA-256) as the zone status reports them; `ds`, when given, the DS the parent should
 * hold now (a rollover decides it), else that of every key-signing key.
 */
export function statusOf(keys: readonly Cryptokey[], ds?: readonly string[]): DnssecStatus {
  const out: Required<Pick<DnssecStatus, 'keys' | 'ds'>> = { keys: [], ds: [] };
  for (const k of [...keys].sort((a, b) => a.id - b.id)) {
    if (!k.dnskey) continue;
    const key = parseDnskey(k.dnskey);
    const role = k.keytype === 'csk' ? 'CSK' : k.keytype === 'ksk' ? 'KSK' : 'ZSK';
    out.keys.push({
      keyTag: keyTag(dnskeyRdata(key)),
      algorithm: key.algorithm,
      role,
      active: k.active,
      published: k.published !== false,
    });
    if (role === 'ZSK') continue;
    for (const ds of k.ds ?? []) if (ds.trim().split(/\s+/)[2] === '2') out.ds.push(ds.trim().toLowerCase());
  }
  if (ds !== undefined && ds.length > 0) out.ds = [...ds];
  return { ...out, cds: 'Published' };
}

/** The setting naming an algorithm number (the rollover speaks numbers, PowerDNS names). */
function algorithmSetting(algorithm: number): DnssecAlgorithmSetting {
  const found = DNSSEC_ALGORITHM_NAMES.find((n) => DNSSEC_ALGORITHMS[n] === algorithm);
  if (found === undefined)
    throw new PowerDnsError('PDNS_DNSSEC', `unsupported DNSSEC algorithm ${algorithm}`);
  return found;
}
