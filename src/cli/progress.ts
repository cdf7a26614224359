const REDRAW_MS = 100

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']

function bytes(count: number): string {
  let value = count
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`
}

function duration(seconds: number): string {
  const whole = Math.round(seconds)
  const h = Math.floor(whole / 3600)
  const m = Math.floor((whole % 3600) / 60)
  const s = String(whole % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`
}

/**
 * A one-line transfer gauge on a terminal. Redraws are throttled because
 * chunks arrive thousands of times a second; on anything but a TTY it stays
 * silent so scripts and logs only see results and errors.
 */
export class Progress {
  private done = 0
  private lastDraw = 0
  private readonly started = Date.now()
  private readonly enabled: boolean

  constructor(
    private readonly total: number | undefined,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly initial = 0,
  ) {
    this.enabled = stream.isTTY === true
    this.done = initial
  }

  add(count: number): void {
    this.done += count
    if (!this.enabled) return
    const now = Date.now()
    if (now - this.lastDraw < REDRAW_MS) return
    this.lastDraw = now
    this.draw(now)
  }

  finish(): void {
    if (!this.enabled) return
    this.draw(Date.now())
    this.stream.write('\n')
  }

  private draw(now: number): void {
    const seconds = Math.max((now - this.started) / 1000, 0.001)
    const rate = (this.done - this.initial) / seconds
    const parts = [this.total === undefined ? bytes(this.done) : `${bytes(this.done)} / ${bytes(this.total)}`]
    if (this.total !== undefined && this.total > 0) parts.push(`${Math.floor((this.done / this.total) * 100)}%`)
    parts.push(`${bytes(rate)}/s`)
    if (this.total !== undefined && rate > 0) parts.push(`ETA ${duration((this.total - this.done) / rate)}`)
    this.stream.write(`\r\x1b[K${parts.join('  ')}`)
  }
}
