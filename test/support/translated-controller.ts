import type { FrontDoors } from '../../src/api/frontdoors/index.ts';
import { BuiltinBackend } from '../../src/backends/builtin/builtin-backend.ts';
import { Controller } from '../../src/control/controller.ts';
import { FrontDoorStore, type FrontDoorStoreOptions } from '../../src/control/front-door-store.ts';
import type { MemoryStore } from '../../src/control/memory-store.ts';
import { MemorySerialStore } from '../../src/control/serial-store.ts';
import { ZoneTable } from '../../src/server/zone-table.ts';

/**
 * A controller serving `store`'s objects through the translating store of `doors` into the built-in
 * backend's zone table, as `serve` wires them: the table, the translating store and the controller
 * (not started).
 */
export function translatedController(
  store: MemoryStore,
  doors: FrontDoors,
  now: () => Date,
  options: Partial<FrontDoorStoreOptions> = {},
): { table: ZoneTable; translated: FrontDoorStore; controller: Controller } {
  const table = new ZoneTable();
  const translated = new FrontDoorStore({ base: store, doors, now, ...options });
  const controller = new Controller({
    store: translated,
    backend: new BuiltinBackend(table),
    serials: new MemorySerialStore(),
    now,
  });
  return { table, translated, controller };
}
