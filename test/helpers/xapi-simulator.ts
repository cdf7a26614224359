import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeJsonRpcResponse, type FailureDescription } from '../../src/xapi/json-rpc.js'
import { xapiOutcome } from '../../src/xapi/xml-rpc-status.js'
import { decodeMethodResponse, encodeMethodCall, type XmlRpcValue } from '../../src/xapi/xml-rpc.js'
import { openSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/simulator.js'
import type { TestScope } from './lab.js'

export const PASSWORD = 'simulator-test-password'

export type Outcome = { readonly result: unknown } | { readonly error: FailureDescription }

export interface RunningSimulator {
  readonly url: string
  readonly simulator: Simulator
  readonly dataDir: string
  /** one JSON-RPC call (v2 unless told) */
  json(method: string, params: unknown[], version?: '1.0' | '2.0'): Promise<Outcome>
  /** one XML-RPC call, its Status struct read */
  xml(method: string, params: XmlRpcValue[]): Promise<{ value: XmlRpcValue } | { error: FailureDescription }>
  /** a JSON-RPC call that must succeed */
  call<T = unknown>(method: string, params: unknown[]): Promise<T>
  login(originator?: string): Promise<string>
}

/** A simulator on an ephemeral port over a fresh demo lab, closed and removed when the test ends. */
export async function startSimulator(t: TestScope, options: Partial<SimulatorOptions> = {}): Promise<RunningSimulator> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-xapi-'))
  const simulator = await openSimulator({ dataDir, password: PASSWORD, stepDelay: 1, ...options })
  t.teardown(async () => {
    await simulator.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  const url = await simulator.listen(0, '127.0.0.1')
  let id = 0
  const json: RunningSimulator['json'] = async (method, params, version = '2.0') => {
    const body = version === '2.0' ? { jsonrpc: '2.0', method, params, id: ++id } : { method, params, id: ++id }
    const response = await fetch(`${url}/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const decoded = decodeJsonRpcResponse(await response.text())
    return 'error' in decoded ? { error: decoded.error } : { result: decoded.result }
  }
  const xml: RunningSimulator['xml'] = async (method, params) => {
    const response = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: encodeMethodCall(method, params) })
    const decoded = decodeMethodResponse(await response.text())
    const outcome = 'value' in decoded ? xapiOutcome(decoded.value) : undefined
    if (outcome === undefined) throw new Error(`not a XAPI answer: ${JSON.stringify(decoded)}`)
    return outcome
  }
  const call = async <T>(method: string, params: unknown[]): Promise<T> => {
    const outcome = await json(method, params)
    if ('error' in outcome) throw new Error(`${method} failed: ${outcome.error.join(' ')}`)
    return outcome.result as T
  }
  return { url, simulator, dataDir, json, xml, call, login: (originator = 'test') => call<string>('session.login_with_password', ['root', PASSWORD, '1.0', originator]) }
}

/** A task's record once it is no longer pending, followed through `event.from` (no polling). */
export async function taskOutcome(xapi: RunningSimulator, session: string, task: string): Promise<Record<string, unknown>> {
  let { token } = await xapi.call<{ token: string }>('event.from', [session, ['task'], '', 0])
  for (;;) {
    const record = await xapi.call<Record<string, unknown>>('task.get_record', [session, task])
    if (record['status'] !== 'pending' && record['status'] !== 'cancelling') return record
    ;({ token } = await xapi.call<{ token: string }>('event.from', [session, ['task'], token, 30]))
  }
}
