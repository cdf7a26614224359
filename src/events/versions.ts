import type { EventBus } from './bus.js'

/**
 * A change counter per object type, fed by the event bus: anything derived
 * from a collection (a cached listing) is current while the counters it was
 * built from have not moved.
 */
export class Versions {
  readonly #counters = new Map<string, number>()
  readonly #unsubscribe: () => void

  constructor(bus: EventBus) {
    this.#unsubscribe = bus.subscribe((change) => {
      const type = change.object.type
      this.#counters.set(type, (this.#counters.get(type) ?? 0) + 1)
      if (change.previous !== undefined && change.previous.type !== type) {
        this.#counters.set(change.previous.type, (this.#counters.get(change.previous.type) ?? 0) + 1)
      }
    })
  }

  of(types: readonly string[]): string {
    return types.map((type) => this.#counters.get(type) ?? 0).join(':')
  }

  close(): void {
    this.#unsubscribe()
  }
}
