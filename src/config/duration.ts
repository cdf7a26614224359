import ms from 'ms'

/** Duration text (`30 days`, `0.5 year`, `1 hour`) or a number of milliseconds; undefined when unreadable. */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  if (typeof value !== 'string' || value.trim() === '' || value.length > 100) return undefined
  const parsed = ms(value.trim() as ms.StringValue)
  return typeof parsed === 'number' && Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined
}
