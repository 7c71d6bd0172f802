import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { DNSZone } from '../../api/index.ts';
import { BuiltinBackend } from '../../backends/builtin/builtin-backend.ts';
import { Controller } from '../../control/controller.ts';
import { MemoryStore } from '../../control/memory-store.ts';
import { ZoneTable } from '../../server/zone-table.ts';
import { ManifestSource } from './manifest-source.ts';
import { StateStore } from './state-file.ts';
import { rememberAcceptance, restoreAcceptance } from './zone-acceptance.ts';

const HEADER = 'apiVersion: dns.zonekeeper.dev/v1alpha1';
const CLASS = `${HEADER}\nkind: DNSZoneClass\nmetadata: {name: builtin}\nspec: {backend: {builtin: {}}, nameServers: [ns1.example.net.]}\n`;
const victim = (namespace: string, className: string, extra = '') =>
  `${HEADER}\nkind: DNSZone\nmetadata: {name: victim, namespace: ${namespace}}\nspec: {domainName: victim.test, className: ${className}}\n${extra}`;

describe('folder mode remembers which zones were served (Accepted conditions in the state)', () => {
  let dir: string;
  let stateDir: string;
  let clock: number;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'zk-accepted-'));
    stateDir = await mkdtemp(path.join(tmpdir(), 'zk-accepted-state-'));
    clock = Date.parse('2026-03-01T00:00:00Z');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(stateDir, { recursive: true, force: true });
  });

  /** One `serve` lifetime, wired as serve wires it: load, restore, remember, then the controller. */
  const run = async () => {
    // A clock that moves on at every reading: objects first seen in different reloads differ in age.
    const now = () => {
      clock += 1000;
      return new Date(clock);
    };
    const state = await StateStore.open(stateDir);
    const store = new MemoryStore(now);
    const source = new ManifestSource({ dir, store, state, now });
    const controller = new Controller({
      store,
      backend: new BuiltinBackend(new ZoneTable()),
      serials: state,
      now,
    });
    await source.reload();
    await restoreAcceptance(store, state);
    const forget = rememberAcceptance(store, state);
    controller.start();
    await controller.idle();
    const accepted = (key: string) =>
      store.get('DNSZone', key)?.status?.conditions?.find((c) => c.type === 'Accepted');
    return {
      store,
      source,
      controller,
      accepted,
      async stop() {
        await controller.idle();
        controller.stop();
        forget();
        await state.close();
      },
    };
  };

  test('after a restart the newer zone that was served keeps its domain against the older refused one', async () => {
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'evil.yaml'), victim('evil', 'not-yet'));
    const first = await run();
    assert.equal(first.accepted('evil/victim')?.reason, 'ClassNotFound');
    await writeFile(path.join(dir, 'team-a.yaml'), victim('team-a', 'builtin'));
    await first.source.reload();
    await first.controller.idle();
    assert.equal(first.accepted('team-a/victim')?.status, 'True');
    const since = first.accepted('team-a/victim')?.lastTransitionTime;
    await writeFile(path.join(dir, 'evil.yaml'), victim('evil', 'builtin'));
    await first.source.reload();
    await first.controller.idle();
    assert.equal(first.accepted('evil/victim')?.reason, 'Conflict');
    assert.ok(
      first.store.get('DNSZone', 'evil/victim')!.metadata.creationTimestamp! <
        first.store.get('DNSZone', 'team-a/victim')!.metadata.creationTimestamp!,
      'evil/victim is the older zone',
    );
    await first.stop();

    // Before: statuses were in memory only, so the restart judged by age and the older zone won.
    const second = await run();
    const teamA = second.accepted('team-a/victim');
    assert.equal(teamA?.status, 'True', teamA?.message);
    assert.equal(teamA?.lastTransitionTime, since, 'served since before the restart');
    assert.equal(second.accepted('evil/victim')?.reason, 'Conflict');
    assert.match(second.accepted('evil/victim')?.message ?? '', /already served by DNSZone team-a\/victim/);
    await second.stop();
  });

  test('a status written into a manifest is not taken for what serve accepted', async () => {
    await writeFile(path.join(dir, 'class.yaml'), CLASS);
    await writeFile(path.join(dir, 'evil.yaml'), victim('evil', 'not-yet'));
    const first = await run();
    await writeFile(path.join(dir, 'team-a.yaml'), victim('team-a', 'builtin'));
    await first.source.reload();
    await first.controller.idle();
    await first.stop();

    // evil claims to have been served since 2000 and fixes its class while serve is stopped.
    const forged = [
      'status:',
      '  conditions:',
      '    - {type: Accepted, status: "True", reason: Accepted, message: served, lastTransitionTime: "2000-01-01T00:00:00Z"}',
      '',
    ].join('\n');
    await writeFile(path.join(dir, 'evil.yaml'), victim('evil', 'builtin', forged));
    const second = await run();
    assert.deepEqual(second.source.problems(), [], 'the manifest with a status is valid');
    assert.equal((second.store.get('DNSZone', 'evil/victim') as DNSZone).spec.className, 'builtin');
    assert.equal(second.accepted('team-a/victim')?.status, 'True');
    assert.equal(second.accepted('evil/victim')?.reason, 'Conflict');
    await second.stop();
  });
});
