import type { StatsTree, XapiStats } from '../driver/types.js'
import type { StatsWindow } from './granularity.js'

/**
 * The points a window gained over an earlier one (the newest `steps`), as a
 * window of their own: a lab series' point depends only on its object, its
 * metric and its instant (src/stats/series.ts), so the points of a window
 * that moved on are the earlier window's, shifted, plus these.
 */
export function newPoints(window: StatsWindow, steps: number): StatsWindow {
  return { endTimestamp: window.endTimestamp, interval: window.interval, times: window.times.slice(-steps) }
}

function shifted(previous: StatsTree, added: StatsTree, steps: number): StatsTree | undefined {
  const tree: StatsTree = {}
  for (const [metric, points] of Object.entries(added)) {
    const before = previous[metric]
    if (Array.isArray(points)) {
      if (!Array.isArray(before)) return undefined
      tree[metric] = [...before.slice(steps), ...points]
    } else {
      if (before === undefined || Array.isArray(before)) return undefined
      const sub = shifted(before, points, steps)
      if (sub === undefined) return undefined
      tree[metric] = sub
    }
  }
  return tree
}

/**
 * `previous` moved on to `window` by `steps` points, `added` holding the new
 * ones (made over `newPoints(window, steps)` for the same object); undefined
 * when the two are not of the same shape.
 */
export function advanced(previous: XapiStats, added: XapiStats, steps: number, window: StatsWindow): XapiStats | undefined {
  const stats = shifted(previous.stats, added.stats, steps)
  return stats === undefined ? undefined : { endTimestamp: window.endTimestamp, interval: window.interval, stats }
}
