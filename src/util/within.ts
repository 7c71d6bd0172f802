/**
 * Whether `promise` settles within `ms` milliseconds (its result is not reported, and it keeps running
 * if it does not). For bounding waits on the network: shutdown steps, a status resync's projections.
 * An infinite `ms` waits.
 */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  if (!Number.isFinite(ms)) return settled;
  if (ms <= 0) return false;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([settled, expired]);
  } finally {
    clearTimeout(timer);
  }
}
