import { setTimeout as sleep } from 'node:timers/promises'
import { aborted } from '../../../errors.js'
import type { OperationContext } from '../../types.js'
import type { LabDisks } from '../disks.js'
import type { LabStore } from '../store.js'
import { Plan } from './plan.js'

/** What every operation of the lab works with. */
export interface LabEnv {
  readonly store: LabStore
  /** ms each simulated step takes */
  readonly stepDelay: number
  /** ms since the epoch */
  readonly clock: () => number
  /** the disks' content, when the lab keeps it (it has a data directory) */
  readonly disks?: LabDisks
}

/** One operation in progress: the lab, who asked, and where to report. */
export interface Operation {
  readonly env: LabEnv
  readonly signal: AbortSignal
  readonly userId: string
  readonly progress: Progress
}

export function operation(env: LabEnv, context: OperationContext): Operation {
  return { env, signal: context.signal, userId: context.userId, progress: new Progress(context.progress) }
}

/** Whole percents, only ever increasing, whatever the callers' rounding. */
export class Progress {
  readonly #report: (percent: number) => void
  #last = 0

  constructor(report: (percent: number) => void) {
    this.#report = report
  }

  /** `fraction` of the work is done (0 to 1). */
  set(fraction: number): void {
    const percent = Math.min(100, Math.floor(fraction * 100 + 1e-9))
    if (percent <= this.#last) return
    this.#last = percent
    this.#report(percent)
  }
}

/**
 * Builds `build` on a plan that is then dropped: an operation that cannot
 * happen fails at once, before anything waits or changes.
 */
export function preview<T>(env: LabEnv, build: (plan: Plan) => T): T {
  return build(new Plan(env.store))
}

/**
 * The simulated steps of one operation (or of one part of it, for operations
 * made of several). Each step takes `stepDelay`, then may commit one planned
 * batch, worked out on the state of that moment; progress follows the steps.
 */
export class Run {
  readonly #op: Operation
  readonly #from: number
  readonly #to: number
  readonly #steps: number
  #done = 0
  #abortable = true

  constructor(op: Operation, steps: number, from = 0, to = 1) {
    this.#op = op
    this.#steps = Math.max(1, steps)
    this.#from = from
    this.#to = to
  }

  /** A run over the share [from, to] of this one's progress. */
  part(steps: number, from: number, to: number): Run {
    const span = this.#to - this.#from
    return new Run(this.#op, steps, this.#from + span * from, this.#from + span * to)
  }

  /** Steps where time passes and nothing shows. */
  async wait(count = 1): Promise<void> {
    for (let i = 0; i < count; i++) {
      await this.#sleep()
      this.#advance()
    }
  }

  /** A step that ends in one visible change; what `build` returns is the step's result. */
  async apply<T>(build: (plan: Plan) => T): Promise<T> {
    await this.#sleep()
    const result = this.applyNow(build)
    this.#advance()
    return result
  }

  /** Works something out on the current state without changing it. */
  read<T>(build: (plan: Plan) => T): T {
    return preview(this.#op.env, build)
  }

  /** Commits at once, abort or not: for putting back what an interrupted operation had changed. */
  applyNow<T>(build: (plan: Plan) => T): T {
    const plan = new Plan(this.#op.env.store)
    const result = build(plan)
    plan.commit()
    return result
  }

  /** Past this point the operation runs to its end: stopping would leave things half-way (a host down, say). */
  pastPointOfNoReturn(): void {
    this.#abortable = false
  }

  async #sleep(): Promise<void> {
    const { signal, env } = this.#op
    if (!this.#abortable) {
      await sleep(env.stepDelay)
      return
    }
    if (signal.aborted) throw aborted()
    try {
      await sleep(env.stepDelay, undefined, { signal })
    } catch (error) {
      if (signal.aborted) throw aborted()
      throw error
    }
    // an abort that came as the delay ended still stops the step
    if (signal.aborted) throw aborted()
  }

  #advance(): void {
    this.#done = Math.min(this.#steps, this.#done + 1)
    this.#op.progress.set(this.#from + ((this.#to - this.#from) * this.#done) / this.#steps)
  }
}
