import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { invalidSteeringCases, validSteeringCases } from '../../test/support/steering-examples.ts';
import { formatProblem, validateResource } from './index.ts';
import { resolveSteering, steeredTtl } from './steering.ts';

describe('DNSRecordSet steering fields: validation', () => {
  for (const c of validSteeringCases()) {
    it(`accepts: ${c.name}`, () => {
      const result = validateResource(c.object);
      assert.deepEqual(result.ok ? [] : result.problems.map(formatProblem), []);
    });
  }
  for (const c of invalidSteeringCases()) {
    it(`rejects: ${c.name}`, () => {
      const result = validateResource(c.object);
      assert.ok(!result.ok, 'expected problems');
      assert.deepEqual(
        result.problems.map((p) => ({ path: p.path, code: p.code })),
        c.problems.map((p) => ({ path: p.path, code: p.code })),
        result.problems.map(formatProblem).join('\n'),
      );
      c.problems.forEach((expected, i) => {
        const message = result.problems[i]?.message ?? '';
        assert.ok(
          message.includes(expected.message),
          `message ${JSON.stringify(message)} lacks ${expected.message}`,
        );
      });
    });
  }
});

describe('resolveSteering', () => {
  const base = { type: 'A', records: ['192.0.2.10', '198.51.100.10'] };

  it('is undefined for a record set without steering fields', () => {
    assert.equal(resolveSteering(base, 'api.example.com.'), undefined);
  });

  it('maps each placement to its policy', () => {
    const policy = (placement: string) =>
      resolveSteering({ ...base, placement: placement as 'ActiveActive' }, 'a.')?.policy;
    assert.equal(policy('SingleRegion'), 'All');
    assert.equal(policy('ActiveActive'), 'All');
    assert.equal(policy('ActiveHotStandby'), 'Ordered');
    assert.equal(policy('ActivePassiveWarm'), 'Ordered');
  });

  it('applies health-check defaults: port by protocol, Host = owner without the dot, any 2xx', () => {
    const s = resolveSteering({ ...base, healthCheck: { protocol: 'HTTPS' } }, 'api.example.com.');
    assert.deepEqual(s, {
      policy: 'All',
      candidates: base.records,
      whenAllDown: 'All',
      healthCheck: {
        protocol: 'HTTPS',
        port: 443,
        path: '/',
        host: 'api.example.com',
        expectStatus: [],
        intervalSeconds: 5,
        timeoutSeconds: 2,
        failureThreshold: 3,
        successThreshold: 1,
      },
    });
  });

  it('puts weights and regions in record order', () => {
    const w = resolveSteering(
      { ...base, selection: { policy: 'Weighted', weights: { '198.51.100.10': 20, '192.0.2.10': 80 } } },
      'a.',
    );
    assert.deepEqual(w?.weights, [80, 20]);
    const c = resolveSteering(
      { ...base, selection: { policy: 'Closest', regions: { '198.51.100.10': 'us', '192.0.2.10': 'eu' } } },
      'a.',
    );
    assert.deepEqual(c?.regions, ['eu', 'us']);
  });

  it('raises the TTL of ActivePassiveWarm to 300 and leaves others alone', () => {
    assert.equal(steeredTtl({ placement: 'ActivePassiveWarm' }, 30), 300);
    assert.equal(steeredTtl({ placement: 'ActivePassiveWarm' }, 600), 600);
    assert.equal(steeredTtl({ placement: 'ActiveHotStandby' }, 30), 30);
  });
});
