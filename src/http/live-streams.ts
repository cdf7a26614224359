import type { Logger } from 'pino'

/** A response that stays open: a watch or an event stream. */
export interface LiveStream {
  /** what the log names it by */
  readonly label: Readonly<Record<string, string>>
  /** whether its caller may still receive it (token still valid, same rights) */
  stillAllowed(): Promise<boolean>
  /** ends the response cleanly */
  end(): void
}

/**
 * Every open stream, so that a revoked or expired credential closes its
 * streams on the next check and a shutdown ends them all instead of waiting
 * for clients that never hang up.
 */
export class LiveStreams {
  readonly #streams = new Set<LiveStream>()
  readonly #interval: number
  readonly #log: Logger
  #timer: NodeJS.Timeout | undefined
  #checking = false

  constructor(options: { checkInterval: number; log: Logger }) {
    this.#interval = options.checkInterval
    this.#log = options.log
  }

  add(stream: LiveStream): () => void {
    this.#streams.add(stream)
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.check(), this.#interval)
      this.#timer.unref()
    }
    return () => {
      this.#streams.delete(stream)
      if (this.#streams.size === 0) {
        clearInterval(this.#timer)
        this.#timer = undefined
      }
    }
  }

  /** Ends every stream whose caller is no longer allowed. */
  async check(): Promise<void> {
    if (this.#checking) return
    this.#checking = true
    try {
      for (const stream of [...this.#streams]) {
        if (!this.#streams.has(stream) || (await stream.stillAllowed())) continue
        this.#log.info(stream.label, 'closing a stream whose credentials are no longer valid')
        stream.end()
      }
    } finally {
      this.#checking = false
    }
  }

  endAll(): void {
    for (const stream of [...this.#streams]) stream.end()
    this.#streams.clear()
    clearInterval(this.#timer)
    this.#timer = undefined
  }
}
