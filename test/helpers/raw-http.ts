import { connect, type Socket } from 'node:net'

/** How long a wait gives up: a hang detector with a readable message, not a bound on delivery. */
const WAIT = 30_000

/** A connection on which requests are written as text and everything received is kept as it came. */
export interface RawConnection {
  readonly socket: Socket
  raw(): string
  /** resolves once what was received satisfies `predicate` */
  until(predicate: (raw: string) => boolean): Promise<string>
  /** resolves when the server closes the connection */
  readonly closed: Promise<void>
}

export function rawConnection(url: string, request: string): Promise<RawConnection> {
  const { port, hostname } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(request)
      let raw = ''
      const waiters = new Set<() => void>()
      socket.on('data', (chunk: Buffer) => {
        raw += chunk.toString('latin1')
        for (const waiter of [...waiters]) waiter()
      })
      const closed = new Promise<void>((done) => socket.once('close', () => done()))
      resolve({
        socket,
        raw: () => raw,
        closed,
        until: (predicate) =>
          new Promise((done, fail) => {
            const check = (): void => {
              if (!predicate(raw)) return
              waiters.delete(check)
              clearTimeout(timer)
              done(raw)
            }
            const timer = setTimeout(() => {
              waiters.delete(check)
              fail(new Error(`timed out waiting; received: ${raw.slice(-2000)}`))
            }, WAIT)
            waiters.add(check)
            check()
          }),
      })
    })
    socket.once('error', reject)
  })
}

/** One HTTP/1.1 response read from raw bytes: its head, and its chunks decoded strictly as far as they are complete. */
export interface ChunkedResponse {
  readonly head: string
  readonly chunks: string[]
  /** what follows the last complete chunk: an incomplete one, or the response after this one */
  readonly rest: string
  /** the terminating zero-size chunk was read */
  readonly ended: boolean
}

/** Decodes a chunked response; throws when a size line or a chunk's end is not where its size says. */
export function decodeChunked(raw: string): ChunkedResponse {
  const headEnd = raw.indexOf('\r\n\r\n')
  if (headEnd === -1) return { head: raw, chunks: [], rest: '', ended: false }
  const head = raw.slice(0, headEnd)
  const chunks: string[] = []
  let at = headEnd + 4
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at)
    if (lineEnd === -1) break
    const sizeLine = raw.slice(at, lineEnd)
    if (!/^[0-9a-f]+$/.test(sizeLine)) throw new Error(`bad chunk size line ${JSON.stringify(sizeLine)} at ${at}`)
    const size = parseInt(sizeLine, 16)
    const end = lineEnd + 2 + size
    if (size === 0) {
      if (raw.length < end + 2) break
      return { head, chunks, rest: raw.slice(end + 2), ended: true }
    }
    if (raw.length < end + 2) break
    if (raw.slice(end, end + 2) !== '\r\n') throw new Error(`chunk at ${at} does not end where its size says`)
    chunks.push(raw.slice(lineEnd + 2, end))
    at = end + 2
  }
  return { head, chunks, rest: raw.slice(at), ended: false }
}
