/**
 * `items` when there are at most `max`; else its first `max` and one more made by `more` from how many
 * were left out (a problem saying "N more not listed"). `items` itself is returned when nothing is cut.
 */
export function capped<T>(items: T[], max: number, more: (left: number) => T): T[] {
  if (items.length <= max) return items;
  const listed = items.slice(0, max);
  listed.push(more(items.length - max));
  return listed;
}
