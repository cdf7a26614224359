import { XapiDriver, type XapiDriverOptions } from '../../src/driver/xapi/driver.js'
import type { ConnectedPool } from '../../src/driver/xapi/types.js'
import type { TestScope } from './lab.js'
import { PASSWORD, startSimulator, type RunningSimulator } from './xapi-simulator.js'
import type { SimulatorOptions } from '../../src/simulator/simulator.js'

export interface ConnectedDriver {
  readonly driver: XapiDriver
  readonly pool: ConnectedPool
}

/** A XapiDriver connected to `url` (a simulator), closed when the test ends. */
export async function connectDriver(t: TestScope, url: string, options: XapiDriverOptions = {}): Promise<ConnectedDriver> {
  const driver = new XapiDriver({ allowHttp: true, graceDelay: 0, probeTimeout: 2_000, ...options, index: { pollTimeout: 30, retryDelay: 20, ...options.index } })
  t.teardown(() => driver.close())
  await driver.open()
  const pool = await driver.connect({ host: url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }, new AbortController().signal)
  return { driver, pool }
}

export interface SimulatedPool extends ConnectedDriver {
  readonly simulator: RunningSimulator
}

/** A simulator over a fresh demo lab and a XapiDriver connected to it, both closed when the test ends. */
export async function simulatedPool(t: TestScope, options: { simulator?: Partial<SimulatorOptions>; driver?: XapiDriverOptions } = {}): Promise<SimulatedPool> {
  const simulator = await startSimulator(t, options.simulator)
  return { simulator, ...(await connectDriver(t, simulator.url, options.driver)) }
}

/** Switches simulator faults on (docs/xapi-simulator.md), at `url` (the simulator's master). */
export async function injectFault(url: string, faults: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${url}/simulator/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from(`root:${PASSWORD}`).toString('base64') },
    body: JSON.stringify(faults),
  })
  if (response.status !== 200) throw new Error(`faults ${JSON.stringify(faults)}: ${response.status} ${await response.text()}`)
}

/** What a promise rejected with, or 'no failure'. */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  return 'no failure'
}
