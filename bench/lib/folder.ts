import { moduleLoader } from './ab.ts';

/**
 * A manifests folder wired as `serve` wires it, from one checkout's modules (`moduleLoader`, so a
 * `--baseline` checkout is wired by its own code): a record-table-backed `MemoryStore`, an in-memory
 * `StateStore` (its compactions held, as at a first start, with `holdCompaction`), the folder's change
 * safety (`FolderHold`) and a parse pool of two threads. The set-up the folder benches share;
 * `release` lets the compactions go (nothing when none were held).
 */
export async function folderWiring(root: string) {
  const load = moduleLoader(root);
  const [memory, table, parser, source, state, hold] = await Promise.all([
    load('src/control/memory-store.ts'),
    load('src/zones/record-table.ts'),
    load('src/sources/manifests/manifest-parser.ts'),
    load('src/sources/manifests/manifest-source.ts'),
    load('src/sources/manifests/state-file.ts'),
    load('src/sources/manifests/folder-hold.ts'),
  ]);
  return async (dir: string, options: { holdCompaction?: boolean } = {}) => {
    const recordTable = new table.RecordTable();
    const store = new memory.MemoryStore(undefined, { restoreDeleting: true, recordSets: recordTable });
    // `serve`'s state keeps its record sets in the store's table (a baseline's ignores the option).
    const stateStore = await state.StateStore.open(undefined, { recordTable });
    const release: () => void = options.holdCompaction ? stateStore.holdCompaction() : () => {};
    const pool = new parser.ManifestParserPool(2);
    const folder = new source.ManifestSource({
      folderHold: new hold.FolderHold({ windowMs: 60_000, confirmations: () => [], confirmHint: () => '' }),
      dir,
      store,
      state: stateStore,
      parser: pool,
    });
    return { recordTable, store, stateStore, release, pool, folder };
  };
}
