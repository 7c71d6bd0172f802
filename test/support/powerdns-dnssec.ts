/**
 * The set-up the PowerDNS DNSSEC suites share: a real pdns_server, its API key in a file, an in-memory
 * store and a Controller whose backends include PowerDNS, and the `powerdns` DNSZoneClass pointing at
 * that server (resyncs every second). The caller applies its zones and starts the controller.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DNSZoneClass } from '../../src/api/index.ts';
import { BuiltinBackend } from '../../src/backends/builtin/builtin-backend.ts';
import { BACKENDS, createBackendFactory } from '../../src/backends/registry.ts';
import { Controller } from '../../src/control/controller.ts';
import { MemoryStore } from '../../src/control/memory-store.ts';
import { fileAndEnvSecrets } from '../../src/control/secrets.ts';
import { MemorySerialStore } from '../../src/control/serial-store.ts';
import { ZoneTable } from '../../src/server/zone-table.ts';
import { type PowerDnsOptions, type PowerDnsProcess, startPowerDns } from './powerdns.ts';
import { zoneClass } from './resources.ts';
import { removeAll, tempDir } from './zonekeeper-process.ts';

export interface PowerDnsControlled {
  pdns: PowerDnsProcess;
  /** Holds the API key file; the caller removes it. */
  dir: string;
  store: MemoryStore;
  factory: ReturnType<typeof createBackendFactory>;
  /** Not started yet. */
  controller: Controller;
}

export async function startPowerDnsControlled(options: {
  pdns: PowerDnsOptions;
  /** Prefix of the temporary directory. */
  dirPrefix: string;
  /** Of the `powerdns` class. */
  nameServers: string[];
  /** Of the `powerdns` class, if any. */
  defaults?: DNSZoneClass['spec']['defaults'];
}): Promise<PowerDnsControlled> {
  const pdns = await startPowerDns(options.pdns);
  let dir: string | undefined;
  try {
    dir = await tempDir(options.dirPrefix);
    const keyFile = path.join(dir, 'api-key');
    await writeFile(keyFile, `${pdns.apiKey}\n`);
    const store = new MemoryStore();
    const secrets = fileAndEnvSecrets();
    const factory = createBackendFactory({
      builtin: new BuiltinBackend(new ZoneTable()),
      secrets,
      registry: BACKENDS,
    });
    const controller = new Controller({ store, backend: factory, serials: new MemorySerialStore(), secrets });
    store.apply(
      zoneClass('powerdns', options.nameServers, {
        backend: { powerdns: { url: pdns.apiUrl, apiKeySecretRef: { file: keyFile }, resyncSeconds: 1 } },
        ...(options.defaults ? { defaults: options.defaults } : {}),
      }),
    );
    return { pdns, dir, store, factory, controller };
  } catch (e) {
    await pdns.stop();
    if (dir) await removeAll(dir);
    throw e;
  }
}
