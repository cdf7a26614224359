import { WebSocket } from 'ws'
import { RfbViewer } from './rfb-client.js'

export interface OpenedConsole {
  readonly ws: WebSocket
  readonly viewer: RfbViewer
  /** the close code and reason, once the socket has closed */
  readonly closed: Promise<{ code: number; reason: string }>
}

export interface RefusedConsole {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: { code?: string; error?: string; data?: Record<string, unknown> }
}

/** The WebSocket URL of an object's console on a server at `url` (http://...). */
export const consoleUrl = (url: string, id: string): string => `${url.replace(/^http/, 'ws')}/api/consoles/${encodeURIComponent(id)}`

/**
 * Opens a console as noVNC does and completes the RFB handshake; a refused
 * upgrade resolves with its status and error body instead.
 */
export function openConsole(url: string, id: string, headers: Record<string, string>): Promise<OpenedConsole | RefusedConsole> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(consoleUrl(url, id), { headers })
    ws.binaryType = 'nodebuffer'
    const viewer = new RfbViewer((bytes) => ws.send(bytes))
    const closed = new Promise<{ code: number; reason: string }>((done) => ws.on('close', (code, reason) => done({ code, reason: reason.toString() })))
    ws.on('message', (data: Buffer) => viewer.receive(data))
    ws.on('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as RefusedConsole['body']) })
      })
    })
    ws.on('error', (error) => reject(error))
    viewer.until(() => viewer.width > 0).then(() => resolve({ ws, viewer, closed }), reject)
  })
}

export function isOpen(console: OpenedConsole | RefusedConsole): console is OpenedConsole {
  return 'ws' in console
}

/** Opens a console that must open. */
export async function mustOpen(url: string, id: string, headers: Record<string, string>): Promise<OpenedConsole> {
  const opened = await openConsole(url, id, headers)
  if (!isOpen(opened)) throw new Error(`the console was refused: ${opened.status} ${JSON.stringify(opened.body)}`)
  return opened
}

/** Types text (and Enter with `\n`) and resolves once the viewer has the update that shows it. */
export async function typeAndSee(viewer: RfbViewer, text: string): Promise<void> {
  for (const char of text) {
    const updates = viewer.updates
    viewer.requestUpdate(true)
    viewer.key(char === '\n' ? 0xff0d : char.charCodeAt(0))
    await viewer.until(() => viewer.updates > updates)
  }
}
