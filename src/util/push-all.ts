/**
 * Appends every item of `items` to `target`, one `push` at a time, and returns `target`.
 *
 * `target.push(...items)` passes each item as an argument: V8 puts them all on the stack, and a list
 * of some 100,000 items (a manifest's problems, a file's documents) throws "Maximum call stack size
 * exceeded". Wherever the list's length comes from input, append with this instead.
 */
export function pushAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}
