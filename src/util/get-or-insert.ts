/**
 * The value at `key`, inserting `make()` first when absent (the shape of the TC39 Map upsert proposal).
 * A Map or a WeakMap.
 */
export function getOrInsert<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
