/**
 * Runs `read` over `indexes` with at most `concurrency` reads in flight and
 * yields results in index-list order (notes 4: a FIFO of promises), so memory
 * stays bounded by concurrency × item size whatever the list length.
 */
export async function* readAhead<T>(indexes: readonly number[], read: (index: number) => Promise<T>, concurrency: number): AsyncGenerator<{ index: number; value: T }> {
  const limit = Math.max(1, Math.floor(concurrency))
  const queue: Array<Promise<{ index: number; value: T }>> = []
  let next = 0
  const launch = (): void => {
    const index = indexes[next++] as number
    const pending = read(index).then((value) => ({ index, value }))
    // Settled later by the consumer; marking it handled avoids an unhandled rejection if the consumer stops first.
    pending.catch(() => undefined)
    queue.push(pending)
  }
  while (next < indexes.length && queue.length < limit) launch()
  while (queue.length > 0) {
    const result = await (queue.shift() as Promise<{ index: number; value: T }>)
    if (next < indexes.length) launch()
    yield result
  }
}
