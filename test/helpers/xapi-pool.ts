import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { XoRecord } from '../../src/driver/types.js'
import type { XapiIndex } from '../../src/driver/xapi/operations/context.js'
import { taskOutcome } from '../../src/driver/xapi/task-outcome.js'
import { XapiError, type XapiHttpRequest, type XapiLocator, type XapiPool } from '../../src/driver/xapi/types.js'
import { decodeJsonRpcResponse } from '../../src/xapi/json-rpc.js'
import type { TestScope } from './lab.js'
import { PASSWORD, startSimulator, type RunningSimulator } from './xapi-simulator.js'
import type { SimulatorOptions } from '../../src/simulator/simulator.js'

export interface SimulatedPool {
  readonly sim: RunningSimulator
  readonly pool: XapiPool
  /** where the simulator's lab records live in XAPI: their `_xapiRef` */
  readonly locator: XapiLocator
  /** the simulator's lab, standing for the driver's index (it holds every change at once) */
  readonly index: XapiIndex
  /** the lab record of an id, which must exist */
  record(id: string): XoRecord
  /** the simulator's XAPI record of a ref */
  xapi(ref: string): Readonly<Record<string, unknown>>
  /** the refs of every object of a class */
  refs(cls: string): string[]
}

const MAX_REDIRECTS = 3

/**
 * A minimal XapiPool over a simulator (JSON-RPC, one session, tasks
 * followed through event.from, HTTP handlers with redirects followed), so
 * that the driver's operations and disk access are tested against XAPI
 * before the real connection is merged in.
 */
export async function simulatedPool(t: TestScope, options: Partial<SimulatorOptions> = {}): Promise<SimulatedPool> {
  const sim = await startSimulator(t, options)
  const { db, feed, driver } = sim.simulator.services
  const session = await sim.login('keel-test')
  let id = 0
  const call = async <T>(method: string, params: readonly unknown[]): Promise<T> => {
    const response = await fetch(`${sim.url}/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', method, params: [session, ...params], id: ++id }),
    })
    const decoded = decodeJsonRpcResponse(await response.text())
    if ('error' in decoded) throw new XapiError(decoded.error[0], decoded.error.slice(1))
    return decoded.result as T
  }
  // An upload's body cannot be sent twice: the helper follows redirects of downloads only.
  const send = (url: URL, request: XapiHttpRequest, hops: number): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const { method, body, length, signal } = request
      const outgoing = httpRequest(url, { method, ...(signal === undefined ? {} : { signal }), headers: length === undefined ? {} : { 'content-length': length } }, (response) => {
        const status = response.statusCode ?? 0
        const location = response.headers.location
        if (status === 302 && location !== undefined && body === undefined && hops < MAX_REDIRECTS) {
          response.resume()
          resolve(send(new URL(location, url), request, hops + 1))
        } else if (status < 200 || status >= 300) {
          response.resume()
          reject(new Error(`${method} ${url.pathname} answered HTTP ${status}`))
        } else resolve(response)
      })
      outgoing.on('error', reject)
      if (body === undefined) outgoing.end()
      else body.pipe(outgoing)
    })
  let poolId = ''
  for (const pool of db.ofClass('pool')) poolId = pool.uuid
  const pool: XapiPool = {
    poolId,
    call,
    callAsync: async <T>(method: string, params: readonly unknown[], options = {}) => {
      const task = await call<string>(`Async.${method}`, params)
      try {
        return (await taskOutcome(pool, task, options)) as T
      } finally {
        await call('task.destroy', [task])
      }
    },
    request: (request) => {
      const url = new URL(request.path, sim.url)
      for (const [key, value] of Object.entries({ ...request.query, session_id: session })) url.searchParams.set(key, value)
      return send(url, request, 0)
    },
    settled: () => driver.settled(),
  }
  const locator: XapiLocator = {
    locate: (record) => {
      const stored = typeof record['_xapiRef'] === 'string' ? db.get(record['_xapiRef']) : undefined
      return stored === undefined ? undefined : { pool, ref: stored.ref, cls: stored.cls }
    },
    recordOf: (_pool, ref) => {
      const record = feed.labRecord(ref)
      return record?.['_xapiRef'] === ref ? record : undefined
    },
  }
  return {
    sim,
    pool,
    locator,
    index: driver,
    record: (id) => {
      const record = driver.getObject(id)
      if (record === undefined) throw new Error(`no lab record ${id}`)
      return record
    },
    xapi: (ref) => {
      const stored = db.get(ref)
      if (stored === undefined) throw new Error(`no XAPI object ${ref}`)
      return stored.record
    },
    refs: (cls) => [...db.ofClass(cls)].map((object) => object.ref),
  }
}

export { PASSWORD }
