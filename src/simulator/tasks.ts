import { randomUUID } from 'node:crypto'
import { encodeXmlRpc, XmlRpcDouble, type XmlRpcValue } from '../xapi/xml-rpc.js'
import type { CallContext, Handler, Services } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'

interface Running {
  readonly controller: AbortController
}

/**
 * XAPI tasks (shared notes on xapi §2.2): an Async call answers a task ref at
 * once; the task progresses and settles as `success` with `result` the
 * XML-RPC text of the value (even for JSON-RPC clients, as taskHelper.ml
 * does), or `failure` with `error_info`, or `cancelled`. Settled tasks stay
 * until task.destroy.
 */
export class Tasks {
  readonly #services: Services
  readonly #running = new Map<string, Running>()
  readonly #clock: () => number

  constructor(services: Services, clock: () => number = Date.now) {
    this.#services = services
    this.#clock = clock
  }

  #create(label: string, description: string, session: string): string {
    const uuid = randomUUID()
    const ref = `OpaqueRef:${randomUUID()}`
    this.#services.db.put('task', ref, uuid, {
      uuid,
      name_label: label,
      name_description: description,
      allowed_operations: ['cancel'],
      created: new Date(this.#clock()),
      status: 'pending',
      resident_on: this.#services.masterRef(),
      progress: new XmlRpcDouble(0),
      other_config: {},
    })
    const sessionRecord = this.#services.db.get(session)
    if (sessionRecord !== undefined) {
      const tasks = Array.isArray(sessionRecord.record['tasks']) ? sessionRecord.record['tasks'] : []
      this.#services.db.put('session', session, sessionRecord.uuid, { ...sessionRecord.record, tasks: [...tasks, ref] })
    }
    return ref
  }

  #update(ref: string, fields: Record<string, XmlRpcValue>): void {
    const stored = this.#services.db.get(ref)
    if (stored !== undefined) this.#services.db.put('task', ref, stored.uuid, { ...stored.record, ...fields })
  }

  /** Starts `run` as task `Async.<method>` and answers its ref. */
  runAsync(method: string, session: string, run: (context: CallContext) => Promise<XmlRpcValue>): string {
    const ref = this.#create(`Async.${method}`, '', session)
    const controller = new AbortController()
    this.#running.set(ref, { controller })
    let last = 0
    const context: CallContext = {
      ...this.#services,
      session,
      signal: controller.signal,
      progress: (fraction) => {
        // Steps of a hundredth at most, so a fine-grained operation does not flood event.from.
        if (fraction - last < 0.01 || fraction >= 1) return
        last = fraction
        this.#update(ref, { progress: new XmlRpcDouble(fraction) })
      },
    }
    // A macrotask later, so the caller has the ref before the task can settle.
    setImmediate(() => {
      run(context).then(
        (value) => this.#settle(ref, { status: 'success', result: value === '' ? '' : encodeXmlRpc(value) }),
        (error: unknown) => {
          if (controller.signal.aborted) this.#settle(ref, { status: 'cancelled', error_info: ['TASK_CANCELLED', ref] })
          else if (error instanceof XapiFailure) this.#settle(ref, { status: 'failure', error_info: [...error.description] })
          else this.#settle(ref, { status: 'failure', error_info: ['INTERNAL_ERROR', error instanceof Error ? error.message : String(error)] })
        },
      )
    })
    return ref
  }

  /**
   * Settles a task a client created (task.create) for an HTTP transfer: the
   * transfer's outcome is read from the task, not from the HTTP status. A
   * task that is gone or already settled is left alone.
   */
  settle(ref: string, outcome: { readonly value: XmlRpcValue } | { readonly failure: readonly string[] }): void {
    const task = this.#services.db.get(ref)
    if (task?.cls !== 'task' || (task.record['status'] !== 'pending' && task.record['status'] !== 'cancelling')) return
    const cancelled = this.#running.get(ref)?.controller.signal.aborted === true
    // A transfer that finished as it was cancelled did finish: its task says so.
    if ('value' in outcome) this.#settle(ref, { status: 'success', result: outcome.value === '' ? '' : encodeXmlRpc(outcome.value) })
    else if (cancelled) this.#settle(ref, { status: 'cancelled', error_info: ['TASK_CANCELLED', ref] })
    else this.#settle(ref, { status: 'failure', error_info: [...outcome.failure] })
  }

  /**
   * A transfer starts reporting to a client's pending task: task.cancel then
   * aborts the signal answered (undefined for a task that is not pending, or
   * that another transfer reports to). `settle` or `release` ends it.
   */
  transfer(ref: string): AbortSignal | undefined {
    const task = this.#services.db.get(ref)
    if (task?.cls !== 'task' || task.record['status'] !== 'pending' || this.#running.has(ref)) return undefined
    const controller = new AbortController()
    this.#running.set(ref, { controller })
    return controller.signal
  }

  /** The transfer no longer reports to the task (it went to another host): the task stays pending. */
  release(ref: string): void {
    this.#running.delete(ref)
  }

  progress(ref: string, fraction: number): void {
    const task = this.#services.db.get(ref)
    if (task?.cls === 'task' && task.record['status'] === 'pending') this.#update(ref, { progress: new XmlRpcDouble(Math.min(fraction, 0.99)) })
  }

  #settle(ref: string, fields: Record<string, XmlRpcValue>): void {
    this.#running.delete(ref)
    this.#update(ref, { ...fields, progress: new XmlRpcDouble(1), finished: new Date(this.#clock()), allowed_operations: ['destroy'] })
  }

  readonly handlers: Readonly<Record<string, Handler>> = {
    'task.create': ({ session }, [label, description]) => this.#create(String(label), String(description), session),
    'task.cancel': ({ db }, [ref]) => {
      const task = db.expect('task', String(ref))
      const running = this.#running.get(task.ref)
      if (running === undefined || task.record['status'] !== 'pending') throw operationNotAllowed(`task ${task.ref} is not pending`)
      this.#update(task.ref, { status: 'cancelling' })
      running.controller.abort()
      return ''
    },
    'task.destroy': ({ db }, [ref]) => {
      const task = db.expect('task', String(ref))
      this.#running.get(task.ref)?.controller.abort()
      this.#running.delete(task.ref)
      db.remove(task.ref)
      return ''
    },
  }
}
