interface Slot<T> {
  readonly at: number
  readonly item: T
}

/**
 * Items by deadline, earliest first: a binary heap, so adding and taking
 * the earliest cost O(log n) whatever the number of items.
 */
export class Deadlines<T> {
  readonly #heap: Array<Slot<T>> = []

  get size(): number {
    return this.#heap.length
  }

  /** the earliest deadline, if any */
  get next(): number | undefined {
    return this.#heap[0]?.at
  }

  add(at: number, item: T): void {
    this.#heap.push({ at, item })
    let index = this.#heap.length - 1
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (this.#at(parent) <= at) break
      this.#swap(parent, index)
      index = parent
    }
  }

  /** Removes and returns the items whose deadline is at or before `now`, earliest first. */
  takeUntil(now: number): T[] {
    const due: T[] = []
    while (this.#heap.length > 0 && this.#at(0) <= now) due.push(this.#pop())
    return due
  }

  clear(): void {
    this.#heap.length = 0
  }

  #pop(): T {
    const heap = this.#heap
    const top = heap[0] as Slot<T>
    const last = heap.pop() as Slot<T>
    if (heap.length === 0) return top.item
    heap[0] = last
    let index = 0
    for (;;) {
      const left = index * 2 + 1
      let smallest = index
      if (left < heap.length && this.#at(left) < this.#at(smallest)) smallest = left
      if (left + 1 < heap.length && this.#at(left + 1) < this.#at(smallest)) smallest = left + 1
      if (smallest === index) return top.item
      this.#swap(smallest, index)
      index = smallest
    }
  }

  #at(index: number): number {
    return (this.#heap[index] as Slot<T>).at
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap
    const kept = heap[a] as Slot<T>
    heap[a] = heap[b] as Slot<T>
    heap[b] = kept
  }
}
