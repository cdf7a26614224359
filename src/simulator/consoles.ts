import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { LabTerminal } from '../consoles/lab-terminal.js'
import { RfbSession } from '../consoles/rfb/session.js'
import { subjectOf } from '../consoles/sources.js'
import type { ObjectChange, XoRecord } from '../driver/types.js'
import type { Services } from './context.js'

/** Where the simulator answers once it listens: a console's `location` names its VM's host there. */
export interface ConsoleEndpoint {
  readonly scheme: 'http' | 'https'
  readonly port: number
  /** the master's address */
  readonly host: string
  /** where the host answers on an address of its own, undefined when only the master answers */
  addressOf(hostRef: string): string | undefined
}

interface LiveConsole {
  readonly ref: string
  readonly vmId: string
  readonly vmRef: string
  readonly hostRef: string
  readonly sockets: Set<Duplex>
}

const DOMAINS = ['VM', 'VM-controller'] as const
const live = (vm: XoRecord): boolean => vm['power_state'] === 'Running' || vm['power_state'] === 'Paused'

/**
 * XAPI's consoles: a `console` record (protocol rfb, its `location` on the
 * VM's host) for each running or paused VM and each host's control domain,
 * made when the domain starts and destroyed when it stops or moves to
 * another host, as xenopsd's domains come and go; and the `/console`
 * handler that serves it, an HTTP CONNECT answered `200 OK` then raw RFB
 * both ways (xen-api ocaml/xapi/console.ml), drawn by the lab's console.
 */
export class SimulatedConsoles {
  readonly #services: Services
  readonly #byVm = new Map<string, LiveConsole>()
  readonly #byRef = new Map<string, LiveConsole>()
  #endpoint: ConsoleEndpoint | undefined
  #unsubscribe: (() => void) | undefined

  constructor(services: Services) {
    this.#services = services
  }

  /** Gives every live domain its console, located at `endpoint`, and follows the lab from then on. */
  start(endpoint: ConsoleEndpoint): void {
    this.#endpoint = endpoint
    for (const type of DOMAINS) for (const vm of this.#services.driver.objectsOfType(type)) this.#update(vm)
    this.#unsubscribe = this.#services.driver.subscribe((change) => this.#onChange(change))
  }

  /** Closes every console connection (the simulator stops: they are no server's connections any more). */
  stop(): void {
    this.#unsubscribe?.()
    for (const entry of this.#byRef.values()) for (const socket of entry.sockets) socket.destroy()
  }

  /** The host `hostRef` went down (fault injection): the connections to its consoles break with it. */
  hostStopped(hostRef: string): void {
    for (const entry of this.#byRef.values()) if (entry.hostRef === hostRef) for (const socket of entry.sockets) socket.destroy()
  }

  /**
   * `CONNECT /console?ref=<console or VM ref>&session_id=...` received by
   * the host `hostRef`: 401 for a session that is not valid, 500 for a ref
   * that is no console, a VM not running, or one running on another host
   * (XAPI's Failure); else `200 OK` and the console's RFB.
   */
  connect(hostRef: string, request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy())
    const url = new URL(request.url ?? '/', 'http://simulator')
    if (url.pathname !== '/console') return refuse(socket, 404, 'Not Found', `no handler for CONNECT ${url.pathname}`)
    const session = url.searchParams.get('session_id') ?? /(?:^|;)\s*session_id=([^;]+)/.exec(request.headers.cookie ?? '')?.[1] ?? ''
    try {
      this.#services.sessions.check(session)
    } catch {
      return refuse(socket, 401, 'Unauthorised', 'Connection to VM console', 'WWW-Authenticate: Basic realm="xapi"\r\n')
    }
    const ref = url.searchParams.get('ref') ?? ''
    const entry = this.#byRef.get(ref) ?? [...this.#byRef.values()].find((each) => each.vmRef === ref)
    const vm = entry === undefined ? undefined : this.#services.driver.getObject(entry.vmId)
    if (entry === undefined || vm === undefined) return refuse(socket, 500, 'Internal Error', `${ref} is neither a VM ref nor a console ref`)
    // console.ml's check_vm_is_running_here: a paused VM keeps its console record, but is not served.
    if (vm['power_state'] !== 'Running') return refuse(socket, 500, 'Internal Error', `VM ${entry.vmRef} has power_state <> Running`)
    if (this.#endpoint?.addressOf(entry.hostRef) !== undefined && entry.hostRef !== hostRef) {
      return refuse(socket, 500, 'Internal Error', `VM ${entry.vmRef} is not resident on this host`)
    }
    // A host's console is its control domain's: the lab draws the host's.
    const subject = vm.type === 'VM-controller' ? (this.#services.driver.getObject(String(vm['$container'])) ?? vm) : vm
    socket.write('HTTP/1.1 200 OK\r\n\r\n')
    // A client that does not read is not read either: its next update requests wait until the screens sent so far are taken.
    const rfb = new RfbSession(new LabTerminal(subjectOf(subject)), (bytes) => {
      if (!socket.destroyed && !socket.write(bytes)) socket.pause()
    })
    socket.on('drain', () => socket.resume())
    entry.sockets.add(socket)
    socket.once('close', () => entry.sockets.delete(socket))
    const receive = (bytes: Buffer): void => {
      try {
        rfb.receive(bytes)
      } catch {
        // What breaks the protocol ends the connection, as the VNC server behind XAPI's proxy would.
        socket.destroy()
      }
    }
    socket.on('data', receive)
    rfb.start()
    if (head.length > 0) receive(head)
  }

  #onChange(change: ObjectChange): void {
    if (!(DOMAINS as readonly string[]).includes(change.object.type)) return
    if (change.kind === 'remove') this.#drop(change.object.id)
    else this.#update(change.object)
  }

  #update(vm: XoRecord): void {
    const endpoint = this.#endpoint
    const host = live(vm) ? this.#services.driver.getObject(String(vm['$container'])) : undefined
    const hostRef = host?.type === 'host' ? String(host['_xapiRef']) : undefined
    const current = this.#byVm.get(vm.id)
    if (current?.hostRef === hostRef) return
    // Halted, or moved to another host: its domain, and the console with it, is gone.
    if (current !== undefined) this.#drop(vm.id)
    if (hostRef === undefined || endpoint === undefined) return
    const ref = `OpaqueRef:${randomUUID()}`
    const uuid = randomUUID()
    const vmRef = String(vm['_xapiRef'])
    const address = endpoint.addressOf(hostRef) ?? endpoint.host
    const location = `${endpoint.scheme}://${address.includes(':') ? `[${address}]` : address}:${endpoint.port}/console?ref=${ref}`
    const entry: LiveConsole = { ref, vmId: vm.id, vmRef, hostRef, sockets: new Set() }
    this.#byVm.set(vm.id, entry)
    this.#byRef.set(ref, entry)
    this.#services.db.put('console', ref, uuid, { uuid, protocol: 'rfb', location, VM: vmRef, other_config: {} })
    this.#services.feed.overlay(vmRef, { consoles: [ref] })
  }

  #drop(vmId: string): void {
    const entry = this.#byVm.get(vmId)
    if (entry === undefined) return
    this.#byVm.delete(vmId)
    this.#byRef.delete(entry.ref)
    this.#services.db.remove(entry.ref)
    if (this.#services.driver.getObject(vmId) !== undefined) this.#services.feed.overlay(entry.vmRef, { consoles: [] })
    for (const socket of entry.sockets) socket.end()
  }
}

/** XAPI's refusal of a handler request, on the raw socket: the status, a small page, the connection closed. */
function refuse(socket: Duplex, status: number, reason: string, detail: string, headers = ''): void {
  const body = `<html><body><h1>HTTP ${status} ${reason}</h1>${detail.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)}</body></html>`
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/html\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`)
}
