import { servedClasses, xapiClass, type MessageDef } from '../xapi/datamodel/index.js'
import type { FailureDescription } from '../xapi/json-rpc.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import type { CallContext, Handler, Services } from './context.js'
import { methodUnknown, parameterCountMismatch, XapiFailure } from './failures.js'
import { implicitHandler } from './implicit.js'
import { coerce } from './params.js'

/**
 * Trailing parameters a message gained in a later release, with defaults:
 * the older arity still works (shared notes on xapi §2.3). The datamodel
 * JSON does not record defaults, so they are listed here.
 */
const OPTIONAL_PARAMS: Readonly<Record<string, number>> = {
  'session.login_with_password': 2,
  'VM.snapshot': 1,
  'host.evacuate': 2,
}

export type CallOutcome = { readonly value: XmlRpcValue } | { readonly failure: FailureDescription }

export interface Explicit {
  readonly handler: Handler
  /** offered as Async.<Class>.<message> too */
  readonly async?: boolean
}

/** Runs an Async call: returns the task's ref at once. */
export type AsyncRunner = (method: string, session: string, run: (context: CallContext) => Promise<XmlRpcValue>) => string

/** Resolves a method name to its handler, checks arity, session and parameter types, and runs it. */
export class Dispatcher {
  readonly #services: Services
  readonly #explicit: ReadonlyMap<string, Explicit>
  readonly #runAsync: AsyncRunner
  readonly #shutdown: AbortSignal

  /** `shutdown` ends the calls that wait (event.from) when the simulator stops. */
  constructor(services: Services, explicit: Readonly<Record<string, Explicit>>, runAsync: AsyncRunner, shutdown: AbortSignal) {
    this.#services = services
    this.#explicit = new Map(Object.entries(explicit))
    this.#runAsync = runAsync
    this.#shutdown = shutdown
  }

  /** Every method served, as system.listMethods lists them. */
  methods(): string[] {
    const out = ['system.listMethods']
    for (const cls of servedClasses()) {
      for (const [name] of cls.messages) {
        const method = `${cls.name}.${name}`
        if (this.#resolve(method) === undefined) continue
        out.push(method)
        if (this.#explicit.get(method)?.async === true) out.push(`Async.${method}`)
      }
    }
    return out
  }

  #resolve(method: string): { handler: Handler; message: MessageDef } | undefined {
    const [clsName = '', name = '', extra] = method.split('.')
    const cls = extra === undefined ? xapiClass(clsName) : undefined
    const message = cls?.messages.get(name)
    if (cls === undefined || message === undefined) return undefined
    const handler = this.#explicit.get(method)?.handler ?? (message[3] ? implicitHandler(cls, name) : undefined)
    return handler === undefined ? undefined : { handler, message }
  }

  async call(method: string, params: readonly unknown[]): Promise<CallOutcome> {
    try {
      return { value: await this.#call(method, params) }
    } catch (error) {
      if (error instanceof XapiFailure) return { failure: error.description }
      return { failure: ['INTERNAL_ERROR', error instanceof Error ? error.message : String(error)] }
    }
  }

  async #call(method: string, params: readonly unknown[]): Promise<XmlRpcValue> {
    if (method === 'system.listMethods') return this.methods()
    const isAsync = method.startsWith('Async.')
    const target = isAsync ? method.slice(6) : method
    const resolved = this.#resolve(target)
    if (resolved === undefined || (isAsync && this.#explicit.get(target)?.async !== true)) throw methodUnknown(method)
    const [, definitions] = resolved.message
    const minimum = definitions.length - (OPTIONAL_PARAMS[target] ?? 0)
    if (params.length < minimum || params.length > definitions.length) throw parameterCountMismatch(method, definitions.length, params.length)
    const withSession = definitions[0]?.[1] === 'session ref'
    const session = withSession ? this.#services.sessions.check(params[0]) : ''
    const args = params.slice(withSession ? 1 : 0).map((value, i) => {
      const [name, type] = definitions[i + (withSession ? 1 : 0)] ?? ['', 'string']
      return coerce(value, type, name)
    })
    const run = (context: CallContext) => Promise.resolve(resolved.handler(context, args))
    if (isAsync) return this.#runAsync(target, session, run)
    return run({ ...this.#services, session, signal: this.#shutdown, progress: () => {} })
  }
}
