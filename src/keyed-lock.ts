/**
 * Runs work one at a time per key, in the order it was asked for, while
 * different keys run side by side. A rejection ends only its own work: the
 * next in line still runs. A key is forgotten as soon as its last work
 * settles, so keys that come and go (emails, folders) hold no memory.
 */
export class KeyedLock<K> {
  readonly #tails = new Map<K, Promise<void>>()

  /** Keys with work running or waiting. */
  get size(): number {
    return this.#tails.size
  }

  run<T>(key: K, work: () => Promise<T>): Promise<T> {
    const result = (this.#tails.get(key) ?? Promise.resolve()).then(work)
    // Called before any await of `result` resumes, so its caller finds an idle key already gone.
    const release = (): void => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
    const tail = result.then(release, release)
    this.#tails.set(key, tail)
    return result
  }
}
