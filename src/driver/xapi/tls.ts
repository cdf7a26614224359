import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent, type AgentOptions } from 'node:https'
import type { Duplex } from 'node:stream'
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls'
import { XapiError } from './types.js'

/** How a pool's certificate is trusted: the system's CAs, one pinned SHA-256 fingerprint, or none (allowUnauthorized). */
export type TlsTrust = { readonly mode: 'verify' } | { readonly mode: 'pin'; readonly fingerprint: string } | { readonly mode: 'insecure' }

/** `AB:CD:...` whatever the case or separators it was written with. */
export const normalizeFingerprint = (fingerprint: string): string =>
  (fingerprint.replace(/[^0-9a-f]/gi, '').toUpperCase().match(/../g) ?? []).join(':')

type ConnectCallback = (error: Error | null, socket?: Duplex) => void

/**
 * An HTTPS agent that, when pinning, hands a socket to its request only
 * after the peer's certificate matched: nothing (not even a password) is
 * written to a host that presents another certificate. Every member of the
 * pool is held to the same pin. Records the fingerprint each socket saw.
 */
class PinningAgent extends HttpsAgent {
  readonly #trust: TlsTrust
  readonly #seen: (fingerprint: string) => void

  constructor(options: AgentOptions, trust: TlsTrust, seen: (fingerprint: string) => void) {
    super(options)
    this.#trust = trust
    this.#seen = seen
  }

  // Node's Agent calls createConnection(options, callback) and takes the socket from the callback.
  override createConnection(options: ConnectionOptions, callback: ConnectCallback): undefined {
    const socket: TLSSocket = connect({ ...options, rejectUnauthorized: this.#trust.mode === 'verify' })
    const fail = (error: Error): void => callback(error)
    socket.once('error', fail)
    socket.once('secureConnect', () => {
      socket.off('error', fail)
      const fingerprint = socket.getPeerCertificate().fingerprint256
      if (this.#trust.mode === 'pin' && normalizeFingerprint(fingerprint ?? '') !== normalizeFingerprint(this.#trust.fingerprint)) {
        socket.destroy()
        callback(new XapiError('CERTIFICATE_FINGERPRINT_MISMATCH', [options.host ?? '', fingerprint ?? '']))
        return
      }
      if (fingerprint !== undefined) this.#seen(fingerprint)
      callback(null, socket)
    })
    return undefined
  }
}

export interface PoolAgent {
  readonly agent: HttpAgent
  /** the fingerprint of the last certificate a pool host presented; undefined over plain HTTP */
  readonly fingerprint: () => string | undefined
}

/** A keep-alive agent for one pool: TLS 1.2 at least, the trust given. */
export function poolAgent(protocol: 'http:' | 'https:', trust: TlsTrust, maxSockets: number): PoolAgent {
  if (protocol === 'http:') return { agent: new HttpAgent({ keepAlive: true, maxSockets }), fingerprint: () => undefined }
  let seen: string | undefined
  const agent = new PinningAgent({ keepAlive: true, maxSockets, minVersion: 'TLSv1.2' }, trust, (fingerprint) => (seen = fingerprint))
  return { agent, fingerprint: () => seen }
}
