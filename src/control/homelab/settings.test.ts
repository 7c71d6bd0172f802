import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_HOMELAB_SETTINGS, homelabSettingsFromEnv, parseGoDuration, retryDelay } from './settings.ts';

test('Go durations', () => {
  assert.equal(parseGoDuration('10m'), 600_000);
  assert.equal(parseGoDuration('5s'), 5_000);
  assert.equal(parseGoDuration('1m30s'), 90_000);
  assert.equal(parseGoDuration('250ms'), 250);
  assert.equal(parseGoDuration('1.5h'), 5_400_000);
  assert.equal(parseGoDuration('0'), 0);
  for (const bad of ['', '10', 'm', '5 s', '5sx', '-5s', '1d'])
    assert.equal(parseGoDuration(bad), undefined, bad);
});

test('settings from the environment: defaults, values, and errors naming the variable', () => {
  assert.deepEqual(homelabSettingsFromEnv({}), DEFAULT_HOMELAB_SETTINGS);
  assert.deepEqual(
    homelabSettingsFromEnv({
      DNS_CLASS_HEALTH_CHECK_INTERVAL: '1m',
      DNS_RECORD_RETRY_BASE_DELAY: '1s',
      DNS_RECORD_RETRY_MAX_DELAY: '30s',
      DNS_RECORD_RETRY_MAX_ATTEMPTS: '3',
      DNS_RECORD_DRIFT_CHECK_INTERVAL: '2m',
    }),
    {
      healthCheckIntervalMs: 60_000,
      retryBaseDelayMs: 1_000,
      retryMaxDelayMs: 30_000,
      retryMaxAttempts: 3,
      driftCheckIntervalMs: 120_000,
    },
  );
  assert.throws(
    () => homelabSettingsFromEnv({ DNS_RECORD_RETRY_BASE_DELAY: '5' }),
    /DNS_RECORD_RETRY_BASE_DELAY="5"/,
  );
  assert.throws(
    () => homelabSettingsFromEnv({ DNS_RECORD_RETRY_MAX_ATTEMPTS: 'many' }),
    /DNS_RECORD_RETRY_MAX_ATTEMPTS/,
  );
  assert.throws(() => homelabSettingsFromEnv({ DNS_CLASS_HEALTH_CHECK_INTERVAL: '0' }), /positive duration/);
});

test('backoff: min(base * 2^attempt, max) with the defaults is 5, 10, 20, 40, 60, 60 seconds', () => {
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 100].map((n) => retryDelay(DEFAULT_HOMELAB_SETTINGS, n) / 1000),
    [5, 10, 20, 40, 60, 60, 60],
  );
});
