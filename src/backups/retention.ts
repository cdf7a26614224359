/**
 * The entries beyond the newest `keep`, oldest first (the reference's
 * getOldEntries without long-term buckets). `entries` must be sorted oldest
 * first.
 */
export function oldEntries<T>(keep: number, entries: readonly T[]): T[] {
  return entries.slice(0, Math.max(0, entries.length - Math.max(0, keep)))
}
