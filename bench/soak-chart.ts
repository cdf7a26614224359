// The soak run's chart (bench/soak.ts): its samples drawn as SVG, by hand since two polylines need no library.

export interface Sample {
  /** minutes since the load started */
  readonly minute: number
  readonly rssMiB: number
  /** V8's heap in use, from Keel's /metrics: tells a leak from caches of bytes outside the heap */
  readonly heapMiB: number
  readonly loopP99Ms: number
  readonly requests: number
}

/** Two charts, one above the other, of the samples over the run's minutes. */
export function soakChart(samples: readonly Sample[]): string {
  const width = 800
  const height = 240
  const left = 60
  const chart = (top: number, title: string, value: (sample: Sample) => number, unit: string): string => {
    const values = samples.map(value)
    const max = Math.max(1, ...values) * 1.1
    const last = samples[samples.length - 1]?.minute ?? 1
    const x = (minute: number): number => left + ((width - left - 20) * minute) / Math.max(last, 1e-9)
    const y = (v: number): number => top + height - 30 - ((height - 60) * v) / max
    const points = samples.map((sample, i) => `${x(sample.minute).toFixed(1)},${y(values[i] as number).toFixed(1)}`).join(' ')
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => `<text x="${left - 6}" y="${y(max * f * 0.909).toFixed(1)}" text-anchor="end" font-size="11">${(max * f * 0.909).toFixed(0)}</text>`).join('')
    const minutes = [0, 0.25, 0.5, 0.75, 1].map((f) => `<text x="${x(last * f).toFixed(1)}" y="${top + height - 12}" text-anchor="middle" font-size="11">${(last * f).toFixed(1)}</text>`).join('')
    return (
      `<text x="${left}" y="${top + 18}" font-size="13">${title} (${unit}) over minutes</text>` +
      `<line x1="${left}" y1="${y(0)}" x2="${width - 20}" y2="${y(0)}" stroke="#999"/>` +
      `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="${points}"/>` +
      ticks +
      minutes
    )
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${2 * height}" font-family="sans-serif">` +
    `<rect width="100%" height="100%" fill="white"/>` +
    chart(0, 'Keel resident set', (sample) => sample.rssMiB, 'MiB') +
    chart(height, 'Event-loop delay, p99 of each 5 s', (sample) => sample.loopP99Ms, 'ms') +
    '</svg>\n'
  )
}
