/**
 * Answer steering on a DNSRecordSet (types A and AAAA): health checks of its records, how the records
 * answered to each query are chosen among the healthy ones, and placement presets that set both.
 * The schemas here are part of `dnsRecordSetSpecSchema`; `resolveSteering` turns a valid spec into the
 * plain, defaulted description every backend programs (the built-in server's selection policies, the
 * PowerDNS backend's LUA records).
 */
import { isIP } from 'node:net';
import { type Infer, quote, type Rule, s } from './schema.ts';

/** Placement presets, and the selection policy each one stands for. */
export const PLACEMENTS = [
  'SingleRegion',
  'ActiveActive',
  'ActiveHotStandby',
  'ActivePassiveWarm',
  'WeightedCanary',
] as const;
export type Placement = (typeof PLACEMENTS)[number];

export const SELECTION_POLICIES = ['All', 'Ordered', 'Weighted', 'Closest', 'Random', 'Hashed'] as const;
export type SelectionPolicyName = (typeof SELECTION_POLICIES)[number];

export const PLACEMENT_POLICY: Readonly<Record<Placement, SelectionPolicyName>> = {
  SingleRegion: 'All',
  ActiveActive: 'All',
  ActiveHotStandby: 'Ordered',
  ActivePassiveWarm: 'Ordered',
  WeightedCanary: 'Weighted',
};

/** The TTL floor of `ActivePassiveWarm`: a warm standby is promoted rarely, caches may hold the answer. */
export const WARM_STANDBY_MIN_TTL = 300;

/** At most this many records in a steered record set (each is a probe target and a health slot). */
export const MAX_STEERED_RECORDS = 64;

export const HEALTH_CHECK_DEFAULTS = {
  intervalSeconds: 5,
  timeoutSeconds: 2,
  failureThreshold: 3,
  successThreshold: 1,
} as const;

const HOST_PATTERN =
  '^([A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.)*[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\\.?$';

export const healthCheckSchema = s.object(
  {
    protocol: s.string({
      description:
        'HTTP and HTTPS: a GET of path must answer an expected status; TCP: a connect must succeed.',
      enum: ['HTTP', 'HTTPS', 'TCP'] as const,
    }),
    port: s.optional(
      s.integer({
        description: 'Port probed on each record. Default: 80 for HTTP, 443 for HTTPS; required for TCP.',
        minimum: 1,
        maximum: 65535,
        format: 'int32',
      }),
    ),
    path: s.optional(
      s.string({
        description: 'HTTP(S) only: the path requested with GET. Default: /.',
        minLength: 1,
        maxLength: 1024,
        pattern: '^/[\\x21-\\x7e]*$',
        patternMessage: 'must start with "/" and hold printable ASCII without spaces, e.g. "/healthz"',
      }),
    ),
    host: s.optional(
      s.string({
        description:
          "HTTP(S) only: the Host header and TLS server name (SNI, certificate name). Default: the record set's owner name.",
        minLength: 1,
        maxLength: 253,
        pattern: HOST_PATTERN,
        patternMessage: 'is not a host name; write e.g. "api.example.com"',
      }),
    ),
    expectStatus: s.optional(
      s.array(
        s.integer({ description: 'An HTTP status code.', minimum: 100, maximum: 599, format: 'int32' }),
        {
          description: 'HTTP(S) only: the statuses that count as up. Default: any 2xx.',
          minItems: 1,
          maxItems: 16,
          listType: 'set',
        },
      ),
    ),
    stringMatch: s.optional(
      s.string({
        description: 'HTTP(S) only: text the response body must contain (the first 64 KiB are read).',
        minLength: 1,
        maxLength: 256,
      }),
    ),
    intervalSeconds: s.optional(
      s.integer({
        description: 'Seconds between probes of one record. Default: 5.',
        minimum: 1,
        maximum: 3600,
      }),
    ),
    timeoutSeconds: s.optional(
      s.integer({
        description:
          'Seconds a probe may take before it counts as failed. Default: 2; at most intervalSeconds.',
        minimum: 1,
        maximum: 60,
      }),
    ),
    failureThreshold: s.optional(
      s.integer({
        description: 'Consecutive failed probes that take an up record down. Default: 3.',
        minimum: 1,
        maximum: 100,
      }),
    ),
    successThreshold: s.optional(
      s.integer({
        description: 'Consecutive successful probes that bring a down record back up. Default: 1.',
        minimum: 1,
        maximum: 100,
      }),
    ),
  },
  {
    description:
      'Probes of every record of the set, run by the server that answers; a record that fails them is left out of ' +
      'answers. Without it every record is always up.',
    rules: [
      {
        cel: "self.protocol != 'TCP' || has(self.port)",
        message: 'a TCP health check needs a port',
        fieldPath: '.port',
        reason: 'FieldValueRequired',
        code: 'HEALTHCHECK_PORT_REQUIRED',
        check: (self) => self.protocol !== 'TCP' || self.port !== undefined,
        detail: () => 'a TCP health check needs a port; set e.g. port: 443',
      },
      {
        cel: "self.protocol != 'TCP' || !(has(self.path) || has(self.host) || has(self.expectStatus) || has(self.stringMatch))",
        message: 'path, host, expectStatus and stringMatch apply to HTTP and HTTPS health checks only',
        reason: 'FieldValueForbidden',
        code: 'HEALTHCHECK_HTTP_FIELD',
        check: (self) =>
          self.protocol !== 'TCP' ||
          (self.path === undefined &&
            self.host === undefined &&
            self.expectStatus === undefined &&
            self.stringMatch === undefined),
        detail: (self) => {
          const set = (['path', 'host', 'expectStatus', 'stringMatch'] as const).filter(
            (k) => self[k] !== undefined,
          );
          return `${set.join(', ')} ${set.length === 1 ? 'applies' : 'apply'} to HTTP and HTTPS health checks only; remove ${set.length === 1 ? 'it' : 'them'} or use protocol HTTP or HTTPS`;
        },
      },
      {
        cel: '(has(self.timeoutSeconds) ? self.timeoutSeconds : 2) <= (has(self.intervalSeconds) ? self.intervalSeconds : 5)',
        message: 'timeoutSeconds must not exceed intervalSeconds (defaults 2 and 5)',
        fieldPath: '.timeoutSeconds',
        code: 'HEALTHCHECK_TIMEOUT',
        check: (self) =>
          (self.timeoutSeconds ?? HEALTH_CHECK_DEFAULTS.timeoutSeconds) <=
          (self.intervalSeconds ?? HEALTH_CHECK_DEFAULTS.intervalSeconds),
        detail: (self) =>
          `timeoutSeconds ${self.timeoutSeconds ?? HEALTH_CHECK_DEFAULTS.timeoutSeconds} exceeds intervalSeconds ${self.intervalSeconds ?? HEALTH_CHECK_DEFAULTS.intervalSeconds}; a probe must end before the next one starts`,
      },
    ],
  },
);
export type HealthCheckSpec = Infer<typeof healthCheckSchema>;

export const selectionSchema = s.object(
  {
    policy: s.optional(
      s.string({
        description:
          'All: every healthy record. Ordered: the first healthy record in the order of records. Weighted: one ' +
          'healthy record by weight, the same for a client while weights and health hold. Closest: the healthy ' +
          "records of the client's nearest region (the class's topology). Random: one healthy record at random. " +
          'Hashed: one healthy record by a hash of the client address. Default: All, or what placement sets.',
        enum: SELECTION_POLICIES,
      }),
    ),
    weights: s.optional(
      s.map(s.integer({ description: 'A weight.', minimum: 0, maximum: 65535, format: 'int32' }), {
        description:
          'Weighted: the weight of each record, keyed by the record as written in records; every record needs one.',
        maxProperties: MAX_STEERED_RECORDS,
      }),
    ),
    regions: s.optional(
      s.map(
        s.string({
          description: 'A region name.',
          minLength: 1,
          maxLength: 63,
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
          patternMessage: 'is not a region name; use lowercase letters, digits and "-", e.g. "eu-west"',
        }),
        {
          description:
            'Closest: the region of each record, keyed by the record as written in records; every record needs one.',
          maxProperties: MAX_STEERED_RECORDS,
        },
      ),
    ),
    whenAllDown: s.optional(
      s.string({
        description:
          'What to answer when no record is healthy. All: every record (the default). None: no record (NOERROR ' +
          'without the address). First: the first record.',
        enum: ['All', 'None', 'First'] as const,
      }),
    ),
  },
  { description: 'How the records answered to a query are chosen among the healthy ones.' },
);
export type SelectionSpec = Infer<typeof selectionSchema>;

export const placementSchema = s.optional(
  s.string({
    description:
      'A preset for selection: SingleRegion and ActiveActive → All; ActiveHotStandby → Ordered; ' +
      'ActivePassiveWarm → Ordered with a TTL of at least 300 s; WeightedCanary → Weighted. selection may ' +
      'add weights, regions and whenAllDown, and its policy, when set, must be the one the preset stands for.',
    enum: PLACEMENTS,
  }),
);

/** The fields of a record set spec the steering rules read. */
interface SteeredSpec {
  type: string;
  ttl?: number;
  records: string[];
  healthCheck?: HealthCheckSpec;
  selection?: SelectionSpec;
  placement?: Placement;
}

const STEERED_CEL = '(has(self.healthCheck) || has(self.selection) || has(self.placement))';
const isSteered = (self: SteeredSpec): boolean =>
  self.healthCheck !== undefined || self.selection !== undefined || self.placement !== undefined;

/** The policy a spec asks for: selection.policy, else the placement's, else All. */
export function effectivePolicy(spec: Pick<SteeredSpec, 'selection' | 'placement'>): SelectionPolicyName {
  return spec.selection?.policy ?? (spec.placement !== undefined ? PLACEMENT_POLICY[spec.placement] : 'All');
}

const POLICY_CEL =
  "(has(self.selection) && has(self.selection.policy) ? self.selection.policy : (has(self.placement) ? (self.placement == 'WeightedCanary' ? 'Weighted' : (self.placement == 'ActiveHotStandby' || self.placement == 'ActivePassiveWarm' ? 'Ordered' : 'All')) : 'All'))";

/** The rules steering adds to the record set spec (CEL and their TypeScript twins). */
export const steeringRules: readonly Rule<SteeredSpec>[] = [
  {
    cel: `!${STEERED_CEL} || self.type in ['A', 'AAAA']`,
    message: 'healthCheck, selection and placement apply to A and AAAA record sets only',
    fieldPath: '.type',
    code: 'STEERING_TYPE',
    check: (self) => !isSteered(self) || self.type === 'A' || self.type === 'AAAA',
    detail: (self) =>
      `healthCheck, selection and placement apply to A and AAAA record sets only, not ${self.type}; remove them or steer the A/AAAA record sets the name leads to`,
  },
  {
    cel: `!${STEERED_CEL} || size(self.records) <= ${MAX_STEERED_RECORDS}`,
    message: `a steered record set has at most ${MAX_STEERED_RECORDS} records`,
    fieldPath: '.records',
    code: 'STEERING_TOO_MANY_RECORDS',
    check: (self) => !isSteered(self) || self.records.length <= MAX_STEERED_RECORDS,
    detail: (self) =>
      `a steered record set has at most ${MAX_STEERED_RECORDS} records (each is probed), found ${self.records.length}; split it`,
  },
  {
    cel: "!(has(self.placement) && has(self.selection) && has(self.selection.policy)) || self.selection.policy == (self.placement == 'WeightedCanary' ? 'Weighted' : (self.placement == 'ActiveHotStandby' || self.placement == 'ActivePassiveWarm' ? 'Ordered' : 'All'))",
    message:
      'selection.policy disagrees with placement (SingleRegion, ActiveActive → All; ActiveHotStandby, ActivePassiveWarm → Ordered; WeightedCanary → Weighted)',
    fieldPath: '.selection.policy',
    code: 'PLACEMENT_CONFLICT',
    check: (self) =>
      self.placement === undefined ||
      self.selection?.policy === undefined ||
      self.selection.policy === PLACEMENT_POLICY[self.placement],
    detail: (self) =>
      `placement ${self.placement} stands for selection policy ${PLACEMENT_POLICY[self.placement!]}, but selection.policy is ${self.selection!.policy}; remove one of the two or make them agree`,
  },
  {
    cel: `!has(self.placement) || self.placement != 'ActivePassiveWarm' || !has(self.ttl) || self.ttl >= ${WARM_STANDBY_MIN_TTL}`,
    message: `placement ActivePassiveWarm needs a TTL of at least ${WARM_STANDBY_MIN_TTL} seconds`,
    fieldPath: '.ttl',
    code: 'PLACEMENT_TTL_FLOOR',
    check: (self) =>
      self.placement !== 'ActivePassiveWarm' || self.ttl === undefined || self.ttl >= WARM_STANDBY_MIN_TTL,
    detail: (self) =>
      `placement ActivePassiveWarm needs a TTL of at least ${WARM_STANDBY_MIN_TTL} seconds, got ${self.ttl}; raise ttl or leave it unset (then ${WARM_STANDBY_MIN_TTL} at least)`,
  },
  {
    cel: `${POLICY_CEL} != 'Weighted' || (has(self.selection) && has(self.selection.weights) && self.records.all(r, r in self.selection.weights))`,
    message: 'selection policy Weighted needs selection.weights with a weight for every record',
    fieldPath: '.selection.weights',
    reason: 'FieldValueRequired',
    code: 'WEIGHTS_REQUIRED',
    check: (self) =>
      effectivePolicy(self) !== 'Weighted' ||
      (self.selection?.weights !== undefined && self.records.every((r) => r in self.selection!.weights!)),
    detail: (self) => {
      const missing = self.records.filter((r) => !(r in (self.selection?.weights ?? {})));
      return `selection policy Weighted needs a weight for every record; add ${missing.map((r) => `${quote(r)}: <weight>`).join(', ')} to selection.weights`;
    },
  },
  {
    cel: `${POLICY_CEL} != 'Weighted' || !has(self.selection) || !has(self.selection.weights) || self.selection.weights.exists(k, self.selection.weights[k] > 0)`,
    message: 'selection.weights must give at least one record a weight above 0',
    fieldPath: '.selection.weights',
    code: 'WEIGHTS_ALL_ZERO',
    check: (self) =>
      effectivePolicy(self) !== 'Weighted' ||
      self.selection?.weights === undefined ||
      Object.values(self.selection.weights).some((w) => w > 0),
  },
  {
    cel: `${POLICY_CEL} != 'Closest' || (has(self.selection) && has(self.selection.regions) && self.records.all(r, r in self.selection.regions))`,
    message: 'selection policy Closest needs selection.regions with a region for every record',
    fieldPath: '.selection.regions',
    reason: 'FieldValueRequired',
    code: 'REGIONS_REQUIRED',
    check: (self) =>
      effectivePolicy(self) !== 'Closest' ||
      (self.selection?.regions !== undefined && self.records.every((r) => r in self.selection!.regions!)),
    detail: (self) => {
      const missing = self.records.filter((r) => !(r in (self.selection?.regions ?? {})));
      return `selection policy Closest needs a region for every record; add ${missing.map((r) => `${quote(r)}: <region>`).join(', ')} to selection.regions`;
    },
  },
  {
    cel: '!has(self.selection) || !has(self.selection.weights) || self.selection.weights.all(k, k in self.records)',
    message: 'every key of selection.weights must be one of records, written the same way',
    fieldPath: '.selection.weights',
    code: 'STEERING_UNKNOWN_RECORD',
    check: (self) =>
      self.selection?.weights === undefined ||
      Object.keys(self.selection.weights).every((k) => self.records.includes(k)),
    detail: (self) =>
      `selection.weights names ${Object.keys(self.selection!.weights!)
        .filter((k) => !self.records.includes(k))
        .map(quote)
        .join(', ')}, not in records; write each key exactly as the record is written in records`,
  },
  {
    cel: '!has(self.selection) || !has(self.selection.regions) || self.selection.regions.all(k, k in self.records)',
    message: 'every key of selection.regions must be one of records, written the same way',
    fieldPath: '.selection.regions',
    code: 'STEERING_UNKNOWN_RECORD',
    check: (self) =>
      self.selection?.regions === undefined ||
      Object.keys(self.selection.regions).every((k) => self.records.includes(k)),
    detail: (self) =>
      `selection.regions names ${Object.keys(self.selection!.regions!)
        .filter((k) => !self.records.includes(k))
        .map(quote)
        .join(', ')}, not in records; write each key exactly as the record is written in records`,
  },
];

/** Client networks and their regions, nearest first: where `Closest` sends each client. */
export const topologySchema = s.array(
  s.object(
    {
      network: s.string({
        description: 'Client networks in CIDR form, e.g. 198.51.100.0/24 or 2001:db8::/32.',
        minLength: 1,
        maxLength: 64,
        pattern: '^([0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/[0-9]{1,3})$',
        patternMessage: 'is not a network in CIDR form; write e.g. "198.51.100.0/24" or "2001:db8::/32"',
        rules: [
          {
            cel: 'isCIDR(self)',
            message: 'must be a network in CIDR form, e.g. 198.51.100.0/24 or 2001:db8::/32',
            code: 'BAD_NETWORK',
            check: (self) => isCidr(self),
          },
        ],
      }),
      regions: s.array(
        s.string({
          description: 'A region name, as in selection.regions.',
          minLength: 1,
          maxLength: 63,
          pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
          patternMessage: 'is not a region name; use lowercase letters, digits and "-", e.g. "eu-west"',
        }),
        { description: 'Regions nearest first.', minItems: 1, maxItems: 16, listType: 'set' },
      ),
    },
    {
      description:
        'Clients in network are sent to the first of regions with a healthy record, then the next.',
    },
  ),
  {
    description:
      'For record sets with selection policy Closest: client networks (the EDNS Client Subnet, else the source ' +
      'address) and their regions, nearest first. The longest network containing the client decides; the answer ' +
      'carries its prefix length as the ECS scope. A client in no network gets every healthy record.',
    maxItems: 4096,
  },
);
export type Topology = Infer<typeof topologySchema>;

const regionList = s.array(
  s.string({
    description: 'A region name, as in selection.regions.',
    minLength: 1,
    maxLength: 63,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
    patternMessage: 'is not a region name; use lowercase letters, digits and "-", e.g. "eu-west"',
  }),
  { description: 'Regions nearest first.', minItems: 1, maxItems: 16, listType: 'set' },
);

/** A MaxMind-format GeoIP database and the regions of its countries and continents, for Closest. */
export const geoIpSchema = s.object(
  {
    databaseFile: s.string({
      description:
        'Path of a MaxMind DB file (GeoIP2/GeoLite2 Country or City format) on every server that answers; read ' +
        'when the zone is programmed, not per query.',
      minLength: 1,
      maxLength: 4096,
    }),
    countries: s.optional(
      s.map(regionList, {
        description: 'ISO 3166-1 country code (country.iso_code, e.g. DE) → regions nearest first.',
        maxProperties: 300,
      }),
    ),
    continents: s.optional(
      s.map(regionList, {
        description: 'Continent code (continent.code: AF, AN, AS, EU, NA, OC, SA) → regions nearest first.',
        maxProperties: 7,
      }),
    ),
  },
  {
    description:
      'For Closest, clients in no topology network: their country (else continent) in this database gives the ' +
      'regions; the answer carries the prefix length of the database network as the ECS scope.',
  },
);
export type GeoIp = Infer<typeof geoIpSchema>;

function isCidr(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const family = isIP(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  return family !== 0 && /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** A health check with every default applied. */
export interface ResolvedHealthCheck {
  protocol: 'HTTP' | 'HTTPS' | 'TCP';
  port: number;
  /** HTTP(S): path, Host header and TLS server name (without a trailing dot), statuses ([] = any 2xx). */
  path: string;
  host: string;
  expectStatus: number[];
  stringMatch?: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
  successThreshold: number;
}

/**
 * What a steered RRset asks of the server, defaults applied; plain data (sent to DNS worker
 * processes, hashed into the zone's content). `candidates` are the records in the order written
 * (their normal form: the address as the RRset holds it), with weight and region by index.
 */
export interface Steering {
  policy: SelectionPolicyName;
  candidates: string[];
  weights?: number[];
  regions?: string[];
  whenAllDown: 'All' | 'None' | 'First';
  healthCheck?: ResolvedHealthCheck;
  /** `Closest`: the class's topology. */
  topology?: Topology;
  /** `Closest`: the class's GeoIP database, for clients in no topology network. */
  geoip?: GeoIp;
}

/**
 * The steering of a valid record set spec, or undefined when it asks for none. `fqdn` (absolute, with
 * its trailing dot) is the default Host of HTTP(S) checks; `address` gives a record's normal form.
 */
export function resolveSteering(
  spec: SteeredSpec,
  fqdn: string,
  address: (record: string) => string = (r) => r,
  topology?: Topology,
  geoip?: GeoIp,
): Steering | undefined {
  if (!isSteered(spec)) return undefined;
  const policy = effectivePolicy(spec);
  const out: Steering = {
    policy,
    candidates: spec.records.map(address),
    whenAllDown: spec.selection?.whenAllDown ?? 'All',
  };
  if (policy === 'Weighted') out.weights = spec.records.map((r) => spec.selection?.weights?.[r] ?? 0);
  if (policy === 'Closest') {
    out.regions = spec.records.map((r) => spec.selection?.regions?.[r] ?? '');
    if (topology && topology.length > 0) out.topology = topology;
    if (geoip) out.geoip = geoip;
  }
  const hc = spec.healthCheck;
  if (hc) {
    out.healthCheck = {
      protocol: hc.protocol,
      port: hc.port ?? (hc.protocol === 'HTTPS' ? 443 : 80),
      path: hc.path ?? '/',
      host: (hc.host ?? fqdn).replace(/\.$/, ''),
      expectStatus: hc.expectStatus ?? [],
      ...(hc.stringMatch === undefined ? {} : { stringMatch: hc.stringMatch }),
      intervalSeconds: hc.intervalSeconds ?? HEALTH_CHECK_DEFAULTS.intervalSeconds,
      timeoutSeconds: hc.timeoutSeconds ?? HEALTH_CHECK_DEFAULTS.timeoutSeconds,
      failureThreshold: hc.failureThreshold ?? HEALTH_CHECK_DEFAULTS.failureThreshold,
      successThreshold: hc.successThreshold ?? HEALTH_CHECK_DEFAULTS.successThreshold,
    };
  }
  return out;
}

/** The TTL a steered record set is served with: ActivePassiveWarm raises it to its floor. */
export function steeredTtl(spec: Pick<SteeredSpec, 'placement'>, ttl: number): number {
  return spec.placement === 'ActivePassiveWarm' ? Math.max(ttl, WARM_STANDBY_MIN_TTL) : ttl;
}
