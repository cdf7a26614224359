import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, rename, stat, unlink } from 'node:fs/promises'
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { basename, dirname, join } from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CliError } from './errors.js'
import { Progress } from './progress.js'

/** Where the service is and who is calling it. */
export interface Endpoint {
  readonly url: string
  readonly token: string
}

/** `--url`/`--token` win over KEEL_URL/KEEL_TOKEN. */
export function endpointOf(values: { url?: string | undefined; token?: string | undefined }, command: string): Endpoint {
  const url = values.url ?? process.env['KEEL_URL']
  const token = values.token ?? process.env['KEEL_TOKEN']
  if (url === undefined || url === '') throw new CliError(`${command} needs --url or KEEL_URL`, 2)
  if (token === undefined || token === '') throw new CliError(`${command} needs --token or KEEL_TOKEN (see keel token create)`, 2)
  return { url, token }
}

function send(endpoint: Endpoint, method: string, path: string, headers: OutgoingHttpHeaders = {}): ReturnType<typeof httpRequest> {
  const url = new URL(path, endpoint.url)
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest
  return request(url, { method, headers: { ...headers, cookie: `authenticationToken=${encodeURIComponent(endpoint.token)}` } })
}

function answer(request: ReturnType<typeof httpRequest>, endpoint: Endpoint): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    request.once('response', resolve)
    request.on('error', (error) => reject(new CliError(`cannot reach ${endpoint.url}: ${error.message}`)))
  })
}

const ERROR_BODY_LIMIT = 64 * 1024

/** The server's own words for a refusal: `error`, `code` and `data` of its JSON body. */
async function refusal(response: IncomingMessage, what: string): Promise<CliError> {
  const chunks: Buffer[] = []
  let length = 0
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      if (length < ERROR_BODY_LIMIT) chunks.push(chunk)
      length += chunk.length
    }
  } catch {
    // a cut error body still leaves the status to report
  }
  const text = Buffer.concat(chunks).toString('utf8').slice(0, ERROR_BODY_LIMIT)
  let detail = text.trim()
  try {
    const body = JSON.parse(text) as { error?: unknown; code?: unknown; data?: unknown }
    detail = [
      typeof body.error === 'string' ? body.error : undefined,
      typeof body.code === 'string' ? `(${body.code})` : undefined,
      body.data === undefined ? undefined : JSON.stringify(body.data),
    ]
      .filter((part) => part !== undefined)
      .join(' ')
  } catch {
    // not JSON: the raw text is the best there is
  }
  return new CliError(`${what} failed: HTTP ${response.statusCode ?? '?'}${detail === '' ? '' : ` ${detail}`}`)
}

function meter(progress: Progress): Transform & { count: () => number } {
  let count = 0
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      count += chunk.length
      progress.add(chunk.length)
      callback(null, chunk)
    },
  })
  return Object.assign(transform, { count: () => count })
}

function contentLength(response: IncomingMessage): number | undefined {
  const header = response.headers['content-length']
  return header === undefined ? undefined : Number(header)
}

/** Copies a response body into a file, failing when fewer or more bytes came than announced. */
async function receive(response: IncomingMessage, file: string, flags: 'w' | 'a', already: number, total: number | undefined, what: string): Promise<void> {
  const expected = contentLength(response)
  const progress = new Progress(total ?? (expected === undefined ? undefined : already + expected), process.stderr, already)
  const counter = meter(progress)
  // Opened before the body flows: a stream that opens lazily can create the
  // file after a failed transfer has already cleaned up.
  const handle = await open(file, flags)
  try {
    await pipeline(response, counter, handle.createWriteStream())
  } catch (error) {
    throw new CliError(`${what} failed after ${already + counter.count()} bytes: ${(error as Error).message}`)
  } finally {
    progress.finish()
  }
  if (expected !== undefined && counter.count() !== expected) {
    throw new CliError(`${what} failed: received ${counter.count()} bytes, the server announced ${expected}`)
  }
}

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * GET into a file. The body lands under a temporary name next to the file and
 * takes the file's name only once complete, so a failed download never
 * leaves something that looks like a finished export.
 */
export async function download(endpoint: Endpoint, path: string, file: string, what: string): Promise<void> {
  const request = send(endpoint, 'GET', path)
  request.end()
  const response = await answer(request, endpoint)
  if (response.statusCode !== 200) throw await refusal(response, what)
  const temporary = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.partial`)
  try {
    await receive(response, temporary, 'w', 0, undefined, what)
    await rename(temporary, file)
  } catch (error) {
    await unlink(temporary).catch(() => {})
    throw error
  }
}

/** `bytes START-END/TOTAL` of a 206 answer. */
function parseContentRange(header: string | undefined): { start: number; total: number } | undefined {
  const match = /^bytes (\d+)-\d+\/(\d+)$/.exec(header ?? '')
  return match === null ? undefined : { start: Number(match[1]), total: Number(match[2]) }
}

/**
 * GET into a file that may already hold the beginning of the body: asks for
 * the rest with Range and appends. A server that ignores the range answers
 * 200 with everything, and the file starts over.
 */
export async function resumeDownload(endpoint: Endpoint, path: string, file: string, what: string): Promise<void> {
  const have = (await sizeOf(file)) ?? 0
  const request = send(endpoint, 'GET', path, have > 0 ? { range: `bytes=${have}-` } : {})
  request.end()
  const response = await answer(request, endpoint)
  if (response.statusCode === 200) return receive(response, file, 'w', 0, undefined, what)
  if (response.statusCode === 206) {
    const range = parseContentRange(response.headers['content-range'])
    if (range === undefined || range.start !== have) {
      response.destroy()
      throw new CliError(`${what} failed: the server answered the range ${response.headers['content-range'] ?? '(none)'} for bytes=${have}-`)
    }
    return receive(response, file, 'a', have, range.total, what)
  }
  if (response.statusCode === 416) {
    // Asking past the end is how a file that is already whole shows itself.
    const total = /^bytes \*\/(\d+)$/.exec(String(response.headers['content-range']))?.[1]
    response.resume()
    if (total !== undefined && Number(total) === have) return
  }
  throw await refusal(response, what)
}

/** Sends a file as the body with its exact Content-Length; returns the answer's body when the status is the expected one. */
export async function upload(endpoint: Endpoint, method: string, path: string, file: string, expected: number, what: string): Promise<Buffer> {
  let body: Readable
  let size: number
  try {
    size = (await stat(file)).size
    body = createReadStream(file)
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`)
  }
  const request = send(endpoint, method, path, { 'content-length': size, 'content-type': 'application/octet-stream' })
  const responded = answer(request, endpoint)
  const progress = new Progress(size)
  const sent = pipeline(body, meter(progress), request).then(
    () => undefined,
    (error: unknown) => error as Error,
  )
  let response: IncomingMessage
  try {
    response = await responded
  } finally {
    progress.finish()
  }
  if (response.statusCode !== expected) {
    const error = await refusal(response, what)
    request.destroy()
    throw error
  }
  const failure = await sent
  if (failure !== undefined) throw new CliError(`${what} failed: ${failure.message}`)
  const chunks: Buffer[] = []
  for await (const chunk of response as AsyncIterable<Buffer>) chunks.push(chunk)
  return Buffer.concat(chunks)
}

/** A JSON request whose answer must have the expected status; returns its parsed body. */
export async function requestJson(endpoint: Endpoint, method: string, path: string, expected: number, what: string, body?: unknown): Promise<unknown> {
  const text = body === undefined ? undefined : JSON.stringify(body)
  const request = send(endpoint, method, path, text === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  request.end(text)
  const response = await answer(request, endpoint)
  if (response.statusCode !== expected) throw await refusal(response, what)
  const chunks: Buffer[] = []
  for await (const chunk of response as AsyncIterable<Buffer>) chunks.push(chunk)
  const answered = Buffer.concat(chunks).toString('utf8')
  try {
    return answered === '' ? undefined : (JSON.parse(answered) as unknown)
  } catch {
    throw new CliError(`${what}: the server answered something that is not JSON`)
  }
}
