import type { StatsGranularity } from '../driver/types.js'

/** The four archives XAPI keeps of each data source (its RRDs): step in seconds and points kept. */
export const granularities: Readonly<Record<StatsGranularity, { readonly step: number; readonly points: number }>> = {
  seconds: { step: 5, points: 120 },
  minutes: { step: 60, points: 120 },
  hours: { step: 3600, points: 168 },
  days: { step: 86400, points: 366 },
}

/** The instants (seconds) of the points a window ending at `now` holds, oldest first, each a whole step. */
export interface StatsWindow {
  readonly endTimestamp: number
  readonly interval: number
  readonly times: readonly number[]
}

export function windowAt(granularity: StatsGranularity, nowMs: number): StatsWindow {
  const { step, points } = granularities[granularity]
  const endTimestamp = Math.floor(nowMs / 1000 / step) * step
  const times = Array.from({ length: points }, (_, k) => endTimestamp - (points - 1 - k) * step)
  return { endTimestamp, interval: step, times }
}
