import { aborted } from '../errors.js'
import type { TaskContext, TaskManager } from '../tasks/manager.js'
import type { TaskProperties } from '../tasks/record.js'

/** Counts the bytes of a transfer into its task's progress. */
export class TransferMeter {
  readonly #context: TaskContext
  readonly #total: number | undefined
  #done = 0

  constructor(context: TaskContext, total: number | undefined) {
    this.#context = context
    this.#total = total
  }

  add(bytes: number): void {
    this.#done += bytes
    this.#context.bytes(this.#done, this.#total)
  }

  /** `source`, counted as it flows; stops when the task is aborted. */
  async *count<T extends Uint8Array>(source: AsyncIterable<T>): AsyncGenerator<T> {
    for await (const chunk of source) {
      if (this.#context.signal.aborted) throw aborted()
      this.add(chunk.byteLength)
      yield chunk
    }
  }
}

/**
 * Runs a long export or import as a task, so it shows in `/tasks` with its
 * progress and can be aborted; settles with the work.
 */
export function transferTask<T>(tasks: TaskManager, properties: TaskProperties, total: number | undefined, work: (meter: TransferMeter) => Promise<T>): Promise<T> {
  return tasks.run(properties, (context) => work(new TransferMeter(context, total))).done
}
