import type { XoRecord } from '../driver/types.js'
import { LabTerminal, type ConsoleSubject } from './lab-terminal.js'
import { RfbSession } from './rfb/session.js'

/** The viewer's end of a console, as a link sees it (Keel's WebSocket). */
export interface ConsoleViewer {
  /** the server's bytes; false once the viewer's buffer is full: a relay then stops reading its source until `drained` calls back */
  send(bytes: Buffer): boolean
  /** calls `resume` once the viewer's buffer has room again */
  drained(resume: () => void): void
  /** the far end closed the console (`failed`: it could not be opened, or broke); the viewer is closed with `reason` */
  ended(reason: string, failed?: boolean): void
}

/** The RFB byte stream of one console, however it is served. */
export interface ConsoleLink {
  /** starts the protocol; the viewer is given the server's bytes from then on */
  start(viewer: ConsoleViewer): void
  /** the client's bytes; throws RfbProtocolError when they break the protocol */
  receive(bytes: Buffer): void
  /** the viewer has gone */
  close(): void
}

/** Where consoles come from: the lab draws its own, the XAPI driver relays its pools' (src/driver/xapi/console.ts). */
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
    // A session sends only what the viewer asked for (one screen at most): the lab needs no pause, only the bound upgrade.ts sets.
    start(viewer) {
      session = new RfbSession(new LabTerminal(subjectOf(object)), (bytes) => viewer.send(bytes))
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
