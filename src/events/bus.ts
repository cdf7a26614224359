import type { ChangeListener, ObjectChange } from '../driver/types.js'

/**
 * The one in-process event bus: every change of every object (from the driver,
 * users, groups, tasks) passes here, and every consumer (caches, watchers, SSE)
 * listens here. A throwing listener is isolated so it cannot starve the others.
 */
export class EventBus {
  readonly #listeners = new Set<ChangeListener>()
  readonly #onListenerError: (error: unknown) => void

  constructor(onListenerError: (error: unknown) => void = () => {}) {
    this.#onListenerError = onListenerError
  }

  publish(change: ObjectChange): void {
    for (const listener of this.#listeners) {
      try {
        listener(change)
      } catch (error) {
        this.#onListenerError(error)
      }
    }
  }

  subscribe(listener: ChangeListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}
