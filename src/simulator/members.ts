import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { CallOutcome } from './calls.js'
import type { XapiDatabase } from './database.js'
import type { LabFeed } from './lab-feed.js'
import { isFaultRequest } from './fault-path.js'

const LOOPBACK = /^127\.0\.0\.(\d{1,3})$/

/**
 * Where each host of the pool answers when the simulator listens on a
 * loopback address 127.0.0.x: the master there, the other hosts on the next
 * addresses (x+1, x+2, ...), in the lab's order. Empty for any other address:
 * the master alone answers.
 */
export function memberAddresses(host: string, db: XapiDatabase): Map<string, string> {
  const match = LOOPBACK.exec(host)
  const out = new Map<string, string>()
  if (match === null) return out
  const first = Number(match[1])
  let master: string | undefined
  for (const pool of db.ofClass('pool')) master = String(pool.record['master'])
  const others = [...db.ofClass('host')].map((h) => h.ref).filter((ref) => ref !== master)
  if (master === undefined || first + others.length > 254) return out
  out.set(master, host)
  others.forEach((ref, i) => out.set(ref, `127.0.0.${first + i + 1}`))
  return out
}

/** A pool member's answer to every call: HOST_IS_SLAVE with the master's address, for the client to go there (shared notes on xapi §1.5). */
export const memberOf = (masterAddress: () => string): { call(method: string, params: readonly unknown[]): Promise<CallOutcome> } => ({
  call: async () => ({ failure: ['HOST_IS_SLAVE', masterAddress()] }),
})

type Listener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * Which host is the master, and which hosts have stopped (fault injection):
 * a stopped host resets every connection, as a host that went down mid-way
 * would; the master role passes to the next host that still answers, whose
 * address the members then name in HOST_IS_SLAVE, as after XAPI's emergency
 * transition of a member to master.
 */
export class PoolRoles {
  readonly #db: XapiDatabase
  readonly #feed: LabFeed
  readonly #masterRef: () => string
  readonly #stopped = new Set<string>()
  /** the master paused (pauseMaster), if any: it keeps its role */
  #paused: string | undefined
  /** each host's connections, for a pause to reset them */
  readonly #sockets = new Map<string, Set<Socket>>()
  readonly #onStop = new Set<(ref: string) => void>()
  #addresses = new Map<string, string>()
  /** the master this simulator's host joined (pool.join): every host answers HOST_IS_SLAVE with it */
  #joinedTo: string | undefined

  constructor(db: XapiDatabase, feed: LabFeed, masterRef: () => string) {
    this.#db = db
    this.#feed = feed
    this.#masterRef = masterRef
  }

  /** Where each host answers (memberAddresses), once the simulator listens. */
  set addresses(addresses: Map<string, string>) {
    this.#addresses = addresses
  }

  /** Where the host `ref` answers; undefined when the simulator does not listen on an address of its own for it. */
  addressOf(ref: string): string | undefined {
    return this.#addresses.get(ref)
  }

  /** Whether the host `ref` has been stopped or paused (it resets every connection). */
  isStopped(ref: string): boolean {
    return this.#stopped.has(ref) || this.#paused === ref
  }

  /** Calls `listener` with each host stopped, for what it holds open (its consoles' connections) to go with it. */
  onStop(listener: (ref: string) => void): void {
    this.#onStop.add(listener)
  }

  masterAddress(): string {
    return this.#joinedTo ?? this.#addresses.get(this.#masterRef()) ?? ''
  }

  /** The next loopback address after those in use, for a host that joins; undefined where the master alone answers. */
  nextAddress(): string | undefined {
    const last = Math.max(...[...this.#addresses.values()].map((address) => Number(LOOPBACK.exec(address)?.[1] ?? 0)))
    return this.#addresses.size === 0 || last >= 254 ? undefined : `127.0.0.${last + 1}`
  }

  /** A host that joined answers at `address` from now on. */
  addMember(ref: string, address: string): void {
    this.#addresses.set(ref, address)
  }

  /** This simulator's host joined the pool at `masterAddress`: it serves nothing more. */
  joined(masterAddress: string): void {
    this.#joinedTo = masterAddress
  }

  /** What the host `ref` does with a request: serve it as master, send the client to the master, or reset it. */
  listener(ref: string, master: Listener, member: Listener): Listener {
    return (request, response) => {
      // A paused master still takes faults: the one that ends the pause is sent there.
      if (this.#stopped.has(ref) || (this.#paused === ref && !isFaultRequest(request))) {
        request.socket.destroy()
        return
      }
      this.#track(ref, request.socket)
      if (ref === this.#masterRef() && this.#joinedTo === undefined) master(request, response)
      else member(request, response)
    }
  }

  /** Stops the member that answers at `address` (the master keeps its role); a reason when there is none. */
  stopMember(address: string): string | undefined {
    const ref = [...this.#addresses].find(([, at]) => at === address)?.[0]
    if (ref === undefined) return `no host answers at ${address} (listen on 127.0.0.x for a pool of several hosts)`
    if (ref === this.#masterRef()) return `${address} is the master's address: stop_master stops the master`
    this.#stop(ref)
    return undefined
  }

  /** Stops the master and hands the role to the next host that answers; a reason when none is left. */
  stopMaster(): string | undefined {
    const current = this.#masterRef()
    const next = [...this.#addresses.keys()].find((ref) => ref !== current && !this.#stopped.has(ref))
    if (next === undefined) return 'no other host answers to take over as master (listen on 127.0.0.x for a pool of several hosts)'
    this.#stop(current)
    for (const pool of this.#db.ofClass('pool')) this.#feed.overlay(pool.ref, { master: next })
    return undefined
  }

  /**
   * The master stops answering, its connections reset, but keeps its role
   * (members go on naming it) until resumeMaster: a master back after a
   * network outage, with its sessions and events. `except`: the connection
   * of the fault request itself, which gets its answer.
   */
  pauseMaster(except: Socket): void {
    const ref = this.#masterRef()
    this.#paused = ref
    for (const socket of this.#sockets.get(ref) ?? []) if (socket !== except) socket.destroy()
    for (const listener of this.#onStop) listener(ref)
  }

  resumeMaster(): void {
    this.#paused = undefined
  }

  #track(ref: string, socket: Socket): void {
    const sockets = this.#sockets.get(ref) ?? new Set()
    this.#sockets.set(ref, sockets)
    if (sockets.has(socket)) return
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  }

  #stop(ref: string): void {
    this.#stopped.add(ref)
    for (const listener of this.#onStop) listener(ref)
  }
}
