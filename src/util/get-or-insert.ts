/** The value at `key`, inserting `make()` first when absent (the shape of the TC39 Map upsert proposal). */
export function getOrInsert<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
