/**
 * Lists from this length on are sorted by `Array.prototype.sort`; shorter ones by insertion.
 */
export const SHORT_SORT_MAX = 16;

/**
 * Sorts `list` in place into the order `Array.prototype.sort(compare)` gives it (both are stable, so
 * for a consistent `compare` the order is the same), by insertion when the list is short. V8's sort
 * allocates its state per call (a list of pending runs, about 1.4 KB, and a copy of the list)
 * whatever the length: for the two or three RRsets or record sets of one name, sorted once per
 * name on every zone's first build, that was more memory than the name's records.
 */
export function shortSort<T>(list: T[], compare: (a: T, b: T) => number): T[] {
  if (list.length > SHORT_SORT_MAX) return list.sort(compare);
  for (let i = 1; i < list.length; i++) {
    const item = list[i]!;
    let j = i;
    while (j > 0 && compare(list[j - 1]!, item) > 0) {
      list[j] = list[j - 1]!;
      j--;
    }
    list[j] = item;
  }
  return list;
}
