import { write, writeSync } from 'node:fs'

/**
 * Where log lines go: gathered in memory and written to the file descriptor
 * in large pieces, asynchronously, when 64 KiB have gathered or 100 ms after
 * the first waiting line, whichever comes first. A line then costs an array
 * push, where pino's own destination cost microseconds per line on the
 * single-object hot path. `flushSync` writes out what waits (clean stop,
 * fatal error); lines written meanwhile keep their order.
 */
export class LogDestination {
  readonly #fd: number
  #lines: string[] = []
  #size = 0
  #timer: NodeJS.Timeout | undefined
  #writing = false

  constructor(fd: number) {
    this.#fd = fd
  }

  write(line: string): boolean {
    this.#lines.push(line)
    this.#size += line.length
    if (this.#size >= 65536) this.#flush()
    else this.#timer ??= setTimeout(() => this.#flush(), 100).unref()
    return true
  }

  flushSync(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const text = this.#take()
    // An asynchronous write may still be under way: its bytes were taken before these, so order holds.
    if (text !== '') writeSync(this.#fd, text)
  }

  #take(): string {
    const text = this.#lines.join('')
    this.#lines = []
    this.#size = 0
    return text
  }

  #flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#writing) {
      // One write at a time keeps lines in order; the next flush is armed when this one ends.
      return
    }
    const text = this.#take()
    if (text === '') return
    this.#writing = true
    write(this.#fd, text, () => {
      this.#writing = false
      if (this.#size >= 65536) this.#flush()
      else if (this.#lines.length > 0) this.#timer ??= setTimeout(() => this.#flush(), 100).unref()
    })
  }
}
