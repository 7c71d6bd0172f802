import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Steering } from '../../api/steering.ts';
import { luaContent, luaDeniedCandidates, luaLimits, luaProgram } from './lua.ts';

const http: Steering = {
  policy: 'Ordered',
  candidates: ['192.0.2.10', '198.51.100.10'],
  whenAllDown: 'All',
  healthCheck: {
    protocol: 'HTTP',
    port: 8080,
    path: '/healthz',
    host: "it's.example.com",
    expectStatus: [],
    stringMatch: 'say "ok"',
    intervalSeconds: 5,
    timeoutSeconds: 2,
    failureThreshold: 3,
    successThreshold: 1,
  },
};

test('LUA content: a whole program asking ifurlup for every healthy candidate, then the policy', () => {
  const program = luaProgram(http);
  assert.match(
    program,
    /local up = ifurlup\('http:\/\/it\\'s\.example\.com:8080\/healthz', \{\{'192\.0\.2\.10', '198\.51\.100\.10'\}\}, \{selector='all', backupSelector='all', timeout='2', stringmatch='say "ok"'\}\)/,
  );
  assert.match(program, /return h\[1\]$/);
  const content = luaContent('A', http);
  assert.ok(content.startsWith('A ";local c = '), content);
  assert.ok(content.endsWith('return h[1]"'));
  assert.ok(content.includes('say \\"ok\\"'), 'double quotes escaped for the record content');
});

test('TCP checks use ifportup; every policy ends in a selection over the healthy list', () => {
  const tcp: Steering = {
    ...http,
    healthCheck: { ...http.healthCheck!, protocol: 'TCP', port: 5432 },
  };
  assert.match(luaProgram(tcp), /ifportup\(5432, \{'192\.0\.2\.10', '198\.51\.100\.10'\}, \{selector='all'/);
  assert.match(luaProgram({ ...tcp, policy: 'All' }), /return h$/);
  assert.match(luaProgram({ ...tcp, policy: 'Random' }), /return pickrandom\(h\)$/);
  assert.match(luaProgram({ ...tcp, policy: 'Weighted', weights: [80, 0] }), /\['192\.0\.2\.10'\] = 80/);
  const closest = luaProgram({
    ...tcp,
    policy: 'Closest',
    regions: ['eu', 'us'],
    topology: [
      { network: '10.0.0.0/8', regions: ['eu'] },
      { network: '10.1.0.0/16', regions: ['us', 'eu'] },
    ],
  });
  assert.ok(
    closest.indexOf("netmask({'10.1.0.0/16'})") < closest.indexOf("netmask({'10.0.0.0/8'})"),
    'the longest network first',
  );
});

test('luaLimits names what PowerDNS does not express', () => {
  assert.deepEqual(
    luaLimits({ ...http, whenAllDown: 'None', healthCheck: { ...http.healthCheck!, expectStatus: [204] } }),
    [
      'failureThreshold, successThreshold and intervalSeconds are decided by PowerDNS',
      'ifurlup counts only HTTP 200 as up',
      'whenAllDown None is answered as First when every candidate is down',
    ],
  );
  const hashed = luaLimits({ ...http, policy: 'Hashed', whenAllDown: 'All' });
  assert.ok(
    hashed.some((l) => l.startsWith("PowerDNS answers with the client's source prefix")),
    hashed.join('\n'),
  );
  assert.ok(
    hashed.some((l) => l.startsWith('pickwhashed hashes the client its own way')),
    hashed.join('\n'),
  );
});

test('candidates PowerDNS must not probe: those the probe guard refuses, only when health-checked', () => {
  const permitted = (a: string) => !a.startsWith('127.') && a !== '169.254.169.254';
  const steering: Steering = { ...http, candidates: ['192.0.2.10', '127.0.0.1', '169.254.169.254'] };
  assert.deepEqual(luaDeniedCandidates(steering, permitted), ['127.0.0.1', '169.254.169.254']);
  assert.deepEqual(luaDeniedCandidates(http, permitted), []);
  const { healthCheck: _, ...unchecked } = steering;
  assert.deepEqual(luaDeniedCandidates(unchecked, permitted), [], 'no health check: nothing is probed');
});
