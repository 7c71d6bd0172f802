/** DNSRecordSet manifests with steering fields, valid and invalid, shared by folder-mode and API-server tests. */
import { type ExampleCase, exampleRecordSet, exampleZoneClass } from './api-examples.ts';

type Json = Record<string, unknown>;

function steered(change: (spec: Json) => void): Json {
  const o = exampleRecordSet();
  const spec = o.spec as Json;
  spec.records = ['192.0.2.10', '198.51.100.10'];
  change(spec);
  return o;
}

export function validSteeringCases(): ExampleCase[] {
  return [
    {
      name: 'every steering field',
      object: steered((spec) => {
        spec.ttl = 30;
        spec.healthCheck = {
          protocol: 'HTTPS',
          port: 443,
          path: '/healthz',
          host: 'api.example.com',
          expectStatus: [200, 204],
          stringMatch: 'ok',
          intervalSeconds: 5,
          timeoutSeconds: 2,
          failureThreshold: 3,
          successThreshold: 1,
        };
        spec.selection = {
          policy: 'Weighted',
          weights: { '192.0.2.10': 80, '198.51.100.10': 20 },
          whenAllDown: 'All',
        };
        spec.placement = 'WeightedCanary';
      }),
      problems: [],
    },
    {
      name: 'TCP check and Closest with regions',
      object: steered((spec) => {
        spec.healthCheck = { protocol: 'TCP', port: 5432 };
        spec.selection = { policy: 'Closest', regions: { '192.0.2.10': 'eu', '198.51.100.10': 'us' } };
      }),
      problems: [],
    },
    {
      name: 'placement alone; ActivePassiveWarm without a TTL',
      object: steered((spec) => {
        delete spec.ttl;
        spec.placement = 'ActivePassiveWarm';
      }),
      problems: [],
    },
    {
      name: 'a class with a topology',
      object: (() => {
        const o = exampleZoneClass();
        (o.spec as Json).topology = [
          { network: '198.51.100.0/24', regions: ['us', 'eu'] },
          { network: '2001:db8::/32', regions: ['eu'] },
        ];
        return o;
      })(),
      problems: [],
    },
    {
      name: 'placement with selection that agrees',
      object: steered((spec) => {
        spec.placement = 'ActiveHotStandby';
        spec.selection = { policy: 'Ordered', whenAllDown: 'None' };
      }),
      problems: [],
    },
  ];
}

/** One case per steering rule: each fails with exactly these problems. */
export function invalidSteeringCases(): ExampleCase[] {
  return [
    {
      name: 'steering on a TXT record set',
      object: steered((spec) => {
        spec.type = 'TXT';
        spec.records = ['"a"'];
        spec.placement = 'ActiveActive';
      }),
      problems: [
        { path: 'spec.type', code: 'STEERING_TYPE', message: 'A and AAAA record sets only, not TXT' },
      ],
    },
    {
      name: 'placement and a selection policy that disagree',
      object: steered((spec) => {
        spec.placement = 'ActiveHotStandby';
        spec.selection = { policy: 'All' };
      }),
      problems: [
        {
          path: 'spec.selection.policy',
          code: 'PLACEMENT_CONFLICT',
          message: 'placement ActiveHotStandby stands for selection policy Ordered',
        },
      ],
    },
    {
      name: 'ActivePassiveWarm with a short TTL',
      object: steered((spec) => {
        spec.ttl = 30;
        spec.placement = 'ActivePassiveWarm';
      }),
      problems: [{ path: 'spec.ttl', code: 'PLACEMENT_TTL_FLOOR', message: 'at least 300 seconds, got 30' }],
    },
    {
      name: 'Weighted without a weight for every record',
      object: steered((spec) => {
        spec.placement = 'WeightedCanary';
        spec.selection = { weights: { '192.0.2.10': 1 } };
      }),
      problems: [
        {
          path: 'spec.selection.weights',
          code: 'WEIGHTS_REQUIRED',
          message: 'add "198.51.100.10": <weight>',
        },
      ],
    },
    {
      name: 'Weighted with every weight 0',
      object: steered((spec) => {
        spec.selection = { policy: 'Weighted', weights: { '192.0.2.10': 0, '198.51.100.10': 0 } };
      }),
      problems: [{ path: 'spec.selection.weights', code: 'WEIGHTS_ALL_ZERO', message: 'above 0' }],
    },
    {
      name: 'Closest without regions',
      object: steered((spec) => {
        spec.selection = { policy: 'Closest' };
      }),
      problems: [
        { path: 'spec.selection.regions', code: 'REGIONS_REQUIRED', message: 'a region for every record' },
      ],
    },
    {
      name: 'a weight for a record that is not in records',
      object: steered((spec) => {
        spec.selection = { policy: 'All', weights: { '192.0.2.99': 1 } };
      }),
      problems: [
        { path: 'spec.selection.weights', code: 'STEERING_UNKNOWN_RECORD', message: '"192.0.2.99"' },
      ],
    },
    {
      name: 'a TCP check without a port',
      object: steered((spec) => {
        spec.healthCheck = { protocol: 'TCP' };
      }),
      problems: [
        { path: 'spec.healthCheck.port', code: 'HEALTHCHECK_PORT_REQUIRED', message: 'needs a port' },
      ],
    },
    {
      name: 'HTTP fields on a TCP check',
      object: steered((spec) => {
        spec.healthCheck = { protocol: 'TCP', port: 22, path: '/healthz' };
      }),
      problems: [
        {
          path: 'spec.healthCheck',
          code: 'HEALTHCHECK_HTTP_FIELD',
          message: 'path applies to HTTP and HTTPS',
        },
      ],
    },
    {
      name: 'a timeout longer than the interval',
      object: steered((spec) => {
        spec.healthCheck = { protocol: 'HTTP', intervalSeconds: 1 };
      }),
      problems: [
        {
          path: 'spec.healthCheck.timeoutSeconds',
          code: 'HEALTHCHECK_TIMEOUT',
          message: 'exceeds intervalSeconds 1',
        },
      ],
    },
    {
      name: 'a topology network that is not a network',
      object: (() => {
        const o = exampleZoneClass();
        (o.spec as Json).topology = [{ network: '10.0.0.0/33', regions: ['eu'] }];
        return o;
      })(),
      problems: [{ path: 'spec.topology[0].network', code: 'BAD_NETWORK', message: 'CIDR form' }],
    },
    {
      name: 'an unknown placement',
      object: steered((spec) => {
        spec.placement = 'ActivePassive';
      }),
      problems: [{ path: 'spec.placement', code: 'NOT_IN_ENUM', message: 'ActivePassiveWarm' }],
    },
  ];
}
