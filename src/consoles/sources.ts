import type { XoRecord } from '../driver/types.js'
import { LabTerminal, type ConsoleSubject } from './lab-terminal.js'
import { RfbSession } from './rfb/session.js'

/** The RFB byte stream of one console, however it is served. */
export interface ConsoleLink {
  /** starts the protocol; `send` is given the server's bytes from then on */
  start(send: (bytes: Buffer) => void): void
  /** the client's bytes; throws RfbProtocolError when they break the protocol */
  receive(bytes: Buffer): void
  /** the viewer has gone */
  close(): void
}

/** Where consoles come from: the lab draws its own; a driver that relays its pool's would be another. */
export type ConsoleSource = (object: XoRecord) => ConsoleLink

const text = (value: unknown, fallback: string): string => (typeof value === 'string' && value !== '' ? value : fallback)

/** What the lab's screen names: the object's label, a host name made of it, a kernel from its OS version if it has one. */
export function subjectOf(object: XoRecord): ConsoleSubject {
  const record = object as XoRecord & { name_label?: unknown; hostname?: unknown; os_version?: { uname?: unknown } | null; version?: unknown }
  const name = text(record.name_label, object.id)
  const hostname = text(record.hostname, name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'lab')
  const kernel = object.type === 'host' ? `4.19.0+1 (XCP-ng ${text(record.version, '8.3.0')})` : text(record.os_version?.uname, '6.1.0-keel-lab')
  return { kind: object.type === 'host' ? 'host' : 'VM', name, hostname, kernel }
}

/** The lab's consoles: a simulated text console per session, served by Keel's own RFB server. */
export const labConsoles: ConsoleSource = (object) => {
  let session: RfbSession | undefined
  return {
    start(send) {
      session = new RfbSession(new LabTerminal(subjectOf(object)), send)
      session.start()
    },
    receive(bytes) {
      session?.receive(bytes)
    },
    close() {
      session = undefined
    },
  }
}
