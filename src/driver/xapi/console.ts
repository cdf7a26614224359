import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import type { ConsoleLink, ConsoleSource, ConsoleViewer } from '../../consoles/sources.js'
import type { XoRecord } from '../types.js'
import { XapiError, type XapiLocator, type XapiPool } from './types.js'

/** What the relay asks of the XAPI driver. */
export interface ConsoleTunnels extends Pick<XapiLocator, 'locate'> {
  getObject(id: string): XoRecord | undefined
  /** a raw connection through the CONNECT handler at `location` on `pool` */
  tunnel(pool: XapiPool, location: string): Promise<Duplex>
}

/** Viewer bytes waiting for the pool, at most: a viewer sends keys and update requests, a few bytes each. */
const MAX_UNSENT = 1024 * 1024
/** How long a console the pool closed waits for the index to hold what the pool did (a VM that stopped), in ms. */
const SETTLE_WAIT = 5_000

/**
 * The consoles of the XAPI driver's pools: each relays the RFB of the
 * object's `console` record (a host's is its control domain's) between the
 * pool and Keel's WebSocket, unchanged: the pool's VNC server speaks to the
 * viewer, Keel only checks who may open it.
 */
export function xapiConsoles(driver: ConsoleTunnels, log: Logger): ConsoleSource {
  return (object) => new ConsoleRelay(driver, object, log)
}

class ConsoleRelay implements ConsoleLink {
  readonly #driver: ConsoleTunnels
  readonly #object: XoRecord
  readonly #log: Logger
  #viewer: ConsoleViewer | undefined
  #socket: Duplex | undefined
  /** what the viewer sent before the pool's connection was open */
  #early: Buffer[] = []
  #closed = false

  constructor(driver: ConsoleTunnels, object: XoRecord, log: Logger) {
    this.#driver = driver
    this.#object = object
    this.#log = log
  }

  start(viewer: ConsoleViewer): void {
    this.#viewer = viewer
    this.#open(viewer).catch((error: unknown) => {
      this.#socket?.destroy()
      if (this.#closed) return
      this.#log.warn({ err: error, console: this.#object.id }, 'XAPI: a console could not be opened')
      viewer.ended(`the pool's console could not be opened: ${error instanceof Error ? error.message : String(error)}`, true)
    })
  }

  receive(bytes: Buffer): void {
    const socket = this.#socket
    if (socket === undefined) {
      this.#early.push(bytes)
      return
    }
    if (socket.writableLength > MAX_UNSENT) {
      socket.destroy()
      this.#viewer?.ended('the pool is not reading', true)
      return
    }
    socket.write(bytes)
  }

  close(): void {
    this.#closed = true
    this.#socket?.destroy()
  }

  async #open(viewer: ConsoleViewer): Promise<void> {
    const object = this.#object
    const domain = object.type === 'host' ? this.#driver.getObject(String(object['controlDomain'])) : object
    const located = domain === undefined ? undefined : this.#driver.locate(domain)
    if (located === undefined) throw new XapiError('HANDLE_INVALID', ['VM', domain?.id ?? object.id])
    const { pool, ref } = located
    const location = await rfbLocation(pool, ref)
    if (this.#closed) return
    const socket = await this.#driver.tunnel(pool, location)
    if (this.#closed) {
      socket.destroy()
      return
    }
    this.#socket = socket
    socket.on('error', (error) => this.#log.debug({ err: error, console: object.id }, 'XAPI: console connection error'))
    socket.on('data', (bytes: Buffer) => {
      if (viewer.send(bytes)) return
      socket.pause()
      viewer.drained(() => socket.resume())
    })
    socket.once('close', () => void this.#farEnd(pool, viewer))
    for (const bytes of this.#early.splice(0)) this.receive(bytes)
  }

  /**
   * The pool closed the console. A VM that stopped is seen in the index
   * once its events are in, and its console then closed as the lab's are
   * (`the VM stopped`); waiting for that first says why, when it is why.
   */
  async #farEnd(pool: XapiPool, viewer: ConsoleViewer): Promise<void> {
    if (this.#closed) return
    await pool.settled({ timeout: SETTLE_WAIT }).catch(() => undefined)
    if (!this.#closed) viewer.ended('the pool closed the console')
  }
}

/** Where the VM's RFB console is served (`VM.consoles`, the one whose protocol is rfb). */
async function rfbLocation(pool: XapiPool, vmRef: string): Promise<string> {
  for (const ref of await pool.call<string[]>('VM.get_consoles', [vmRef])) {
    const record = await pool.call<Readonly<Record<string, unknown>>>('console.get_record', [ref])
    if (record['protocol'] === 'rfb' && typeof record['location'] === 'string') return record['location']
  }
  throw new XapiError('HANDLE_INVALID', ['console', vmRef])
}
