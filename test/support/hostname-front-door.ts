/**
 * A front door for tests only: `example.test/v1 Hostname`, one object per host name and address set,
 * mapped to an A record set at the absolute name; objects of one namespace with the same hostname
 * merge into one RRset. Its status has its own shape (one `Published` condition, `fqdn`, `mergedWith`),
 * its own finalizer and admission rules with its own codes, to show each part of the seam.
 * Loaded by tests in process, and by `zonekeeper ... --front-door test/support/hostname-front-door.ts`.
 */
import {
  type ForeignEvent,
  type ForeignObject,
  type FrontDoor,
  keepTransitionTimes,
} from '../../src/api/frontdoors/index.ts';
import type { Condition } from '../../src/api/index.ts';
import { type Infer, type Problem, s } from '../../src/api/schema.ts';

const HOST =
  '^([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\\.?$';

const hostnameSpec = s.object(
  {
    hostname: s.string({
      description: 'The host name, e.g. "www.example.com" (trailing dot optional). Immutable.',
      minLength: 1,
      maxLength: 253,
      pattern: HOST,
      patternMessage: 'is not a host name',
      rules: [
        {
          cel: 'self == oldSelf',
          message: 'hostname is immutable',
          transition: true,
          code: 'HostnameImmutable',
          check: (self, oldSelf) => self === oldSelf,
        },
      ],
    }),
    addresses: s.array(s.string({ description: 'An IPv4 address.', minLength: 7, maxLength: 15 }), {
      description: 'The IPv4 addresses of the host.',
      minItems: 1,
      maxItems: 16,
    }),
    ttl: s.optional(s.integer({ description: 'TTL in seconds.', minimum: 1, maximum: 86400 })),
  },
  { description: 'A host name and its addresses.' },
);
type HostnameSpec = Infer<typeof hostnameSpec>;

const publishedCondition = s.object(
  {
    type: s.string({ description: 'Published.', maxLength: 64 }),
    status: s.string({ description: 'True, False or Unknown.', enum: ['True', 'False', 'Unknown'] }),
    reason: s.string({ description: 'Why.', maxLength: 128 }),
    message: s.string({ description: 'Details.', maxLength: 32768 }),
    observedGeneration: s.optional(s.integer({ description: 'Generation seen.', minimum: 0 })),
    lastTransitionTime: s.string({ description: 'Last change.', format: 'date-time' }),
  },
  { description: 'A condition.' },
);

const hostnameStatus = s.object(
  {
    observedGeneration: s.optional(s.integer({ description: 'Generation seen.', minimum: 0 })),
    fqdn: s.optional(s.string({ description: 'The absolute name published.', maxLength: 255 })),
    mergedWith: s.optional(
      s.array(s.string({ description: 'namespace/name', maxLength: 320 }), {
        description: 'All Hostnames of this RRset, oldest first.',
      }),
    ),
    conditions: s.optional(
      s.array(publishedCondition, { description: 'Published.', listType: 'map', listMapKeys: ['type'] }),
    ),
  },
  { description: 'Whether the host name is published.' },
);
type HostnameStatus = Infer<typeof hostnameStatus>;

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function fqdnOf(hostname: string): string {
  return `${hostname.toLowerCase().replace(/\.$/, '')}.`;
}

export const hostnameFrontDoor: FrontDoor<HostnameSpec, HostnameStatus> = {
  group: 'example.test',
  version: 'v1',
  kind: 'Hostname',
  plural: 'hostnames',
  singular: 'hostname',
  listKind: 'HostnameList',
  shortNames: ['hn'],
  scope: 'Namespaced',
  description: 'Hostname (test front door): a host name and its IPv4 addresses.',
  spec: hostnameSpec,
  status: hostnameStatus,
  printerColumns: [
    { name: 'Hostname', type: 'string', jsonPath: '.spec.hostname' },
    { name: 'Published', type: 'string', jsonPath: '.status.conditions[?(@.type=="Published")].status' },
  ],
  finalizer: 'example.test/hostname',
  merge: 'byKey',
  // The API's own rules, in its own words and codes.
  admit(object) {
    const problems: Problem[] = [];
    object.spec.addresses.forEach((a, i) => {
      if (!IPV4.test(a))
        problems.push({
          path: `spec.addresses[${i}]`,
          code: 'AddressNotIPv4',
          message: `Hostname: ${JSON.stringify(a)} is not an IPv4 address (a Hostname publishes A records only)`,
        });
    });
    object.spec.addresses.forEach((a, i) => {
      if (object.spec.addresses.indexOf(a) < i)
        problems.push({
          path: `spec.addresses[${i}]`,
          code: 'AddressRepeated',
          message: `Hostname: ${a} is listed twice; list each address once`,
        });
    });
    return problems;
  },
  translate(object) {
    const fqdn = fqdnOf(object.spec.hostname);
    return [
      {
        kind: 'DNSRecordSet',
        key: fqdn,
        spec: {
          name: fqdn,
          type: 'A',
          records: [...object.spec.addresses],
          ...(object.spec.ttl !== undefined ? { ttl: object.spec.ttl } : {}),
        },
      },
    ];
  },
  project({ object, outputs, problems, now }): HostnameStatus {
    const generation = object.metadata.generation;
    const output = outputs[0];
    const native = output?.status;
    const find = (type: string) => native?.conditions?.find((c) => c.type === type);
    let published: Omit<Condition, 'lastTransitionTime'>;
    if (problems && problems.length > 0) {
      published = {
        type: 'Published',
        status: 'False',
        reason: 'Rejected',
        message: problems.map((p) => `${p.path}: ${p.message}`).join('; '),
      };
    } else if (!native) {
      published = { type: 'Published', status: 'Unknown', reason: 'Pending', message: 'not reconciled yet' };
    } else if (find('Ready')?.status === 'True') {
      published = { type: 'Published', status: 'True', reason: 'Published', message: find('Ready')!.message };
    } else if (find('Accepted')?.status === 'False') {
      const accepted = find('Accepted')!;
      published = { type: 'Published', status: 'False', reason: accepted.reason, message: accepted.message };
    } else {
      const ready = find('Ready');
      published = {
        type: 'Published',
        status: 'False',
        reason: ready?.reason ?? 'Pending',
        message: ready?.message ?? 'waiting for the server',
      };
    }
    const observed = native?.conditions?.find((c) => c.type === 'Ready')?.observedGeneration;
    const condition: Condition = {
      ...published,
      ...(problems?.length
        ? generation !== undefined
          ? { observedGeneration: generation }
          : {}
        : observed !== undefined
          ? { observedGeneration: observed }
          : {}),
      lastTransitionTime: now,
    };
    return {
      ...(native?.observedGeneration !== undefined ? { observedGeneration: native.observedGeneration } : {}),
      ...(native && 'fqdn' in native && native.fqdn ? { fqdn: native.fqdn } : {}),
      ...(output?.mergedWith ? { mergedWith: [...output.mergedWith] } : {}),
      conditions: keepTransitionTimes(object.status?.conditions as Condition[] | undefined, [condition]),
    };
  },
  event(before, after): ForeignEvent | undefined {
    const was = before?.conditions?.find((c) => c.type === 'Published');
    const now = after.conditions?.find((c) => c.type === 'Published');
    if (!now || (was?.status === now.status && was?.reason === now.reason)) return undefined;
    if (now.status === 'False' && now.reason !== 'Pending')
      return { type: 'Warning', reason: now.reason, action: 'Publish', note: now.message };
    if (now.status === 'True')
      return { type: 'Normal', reason: 'Published', action: 'Publish', note: now.message };
    return undefined;
  },
};

export const frontDoor = hostnameFrontDoor;

/** A Hostname object as a manifest or API body. */
export function hostname(
  namespace: string,
  name: string,
  spec: HostnameSpec,
): ForeignObject<HostnameSpec, HostnameStatus> {
  return { apiVersion: 'example.test/v1', kind: 'Hostname', metadata: { name, namespace }, spec };
}
