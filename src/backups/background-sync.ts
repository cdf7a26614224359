/**
 * A file's datasync started every `every` bytes written, while the writes go
 * on, at most one at a time (backups/chunk-writer.ts, workers/file-output.ts).
 * The first failure is kept and thrown by `check`: a later sync of the same
 * file may no longer report the pages it lost.
 */
export class BackgroundSync {
  readonly #sync: () => Promise<void>
  readonly #every: number
  #syncing: Promise<void> | undefined
  #syncedTo = 0
  #failure: { readonly error: unknown } | undefined

  constructor(sync: () => Promise<void>, every: number) {
    this.#sync = sync
    this.#every = every
  }

  /** The bytes up to `end` are written: a sync of them starts, unless one runs or too few are new. */
  written(end: number): void {
    if (this.#syncing !== undefined || end - this.#syncedTo < this.#every) return
    this.#syncedTo = end
    this.#syncing = this.#sync().then(
      () => {
        this.#syncing = undefined
      },
      (error: unknown) => {
        this.#failure ??= { error }
        this.#syncing = undefined
      },
    )
  }

  /** Throws the first failed sync's error. */
  check(): void {
    if (this.#failure !== undefined) throw this.#failure.error
  }

  /** Settles once no sync runs; never rejects. */
  async idle(): Promise<void> {
    await this.#syncing
  }
}
