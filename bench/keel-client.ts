// What the disk and backup benchmarks share: bench/ servers as child processes, HTTP clients that
// count bytes without holding them, Keel's REST API as the benchmarks call it, and disk content.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomFillSync } from 'node:crypto'
import { closeSync, createReadStream, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs'
import { request, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pipeline } from 'node:stream/promises'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { BLOCK_SIZE, blockCount } from '../src/formats/blocks.js'
import { packageRoot } from '../src/paths.js'

const MiB = 1024 * 1024

// ---------------------------------------------------------------------------------------------
// Child processes

export interface Server {
  readonly child: ChildProcess
  readonly url: string
}

/**
 * Runs a dist/bench/ script in a node process of its own, on `core` when one is given, under
 * `wrapper` (a command that runs the one after it, such as valgrind) when one is given, and
 * resolves with the child and the first line it prints.
 */
export function runScript(
  script: string,
  args: readonly string[],
  options: {
    readonly core: number | undefined
    readonly stderr: 'ignore' | 'inherit'
    readonly nodeFlags?: readonly string[]
    readonly env?: Readonly<Record<string, string>>
    readonly wrapper?: readonly string[]
  },
): Promise<{ child: ChildProcess; line: string }> {
  const node = [...(options.wrapper ?? []), process.execPath, ...(options.nodeFlags ?? []), join(packageRoot, 'dist/bench', script), ...args]
  const [command, ...rest] = options.core === undefined ? node : ['taskset', '-c', String(options.core), ...node]
  const child = spawn(command as string, rest, { stdio: ['ignore', 'pipe', options.stderr], env: { ...process.env, ...options.env } })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
    createInterface({ input: child.stdout! }).once('line', (line) => resolve({ child, line }))
  })
}

/**
 * Starts a bench/ server script and resolves with the URL it prints; pinned to core 0 like the
 * other benchmarks' servers. Keel runs with the service's V8 flags and environment.
 */
export async function startServer(script: string, args: readonly string[], pin: boolean, stderr: 'ignore' | 'inherit'): Promise<Server> {
  const service = script === 'serve-keel.js'
  const { child, line } = await runScript(script, args, {
    core: pin ? 0 : undefined,
    stderr,
    nodeFlags: service ? SERVICE_NODE_FLAGS : [],
    env: service ? SERVICE_ENV : {},
  })
  return { child, url: line }
}

/** Ends one child by its PID and waits for it, so the next measurement has the cores to itself. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  process.kill(child.pid, 'SIGTERM')
  await exited
}

/** User and system CPU seconds a child has used so far, all its threads (/proc/PID/stat, in clock ticks of 1/100 s). */
export function cpuTimes(child: ChildProcess): { user: number; system: number } {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

// ---------------------------------------------------------------------------------------------
// HTTP clients: bytes are counted and dropped, never held

export interface Transfer {
  readonly status: number
  readonly bytes: number
  readonly seconds: number
}

export const secondsSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e9

/** The status and the byte count of a response, its body read to the end and dropped. */
function drained(res: IncomingMessage, started: bigint): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    let bytes = 0
    res.on('data', (chunk: Buffer) => (bytes += chunk.length))
    res.once('end', () => resolve({ status: res.statusCode ?? 0, bytes, seconds: secondsSince(started) }))
    res.once('error', reject)
  })
}

/**
 * GET by curl into /dev/null, timed from the start to the last byte. A fresh connection each time, as a
 * backup job opens one per disk. curl, not a node client: reading in this process, the client was the
 * slower end of a zstd XVA export (1.45–1.87 s for 4 GiB of disk against 1.22–1.45 s with curl).
 */
export async function download(url: string, headers: Readonly<Record<string, string>>): Promise<Transfer> {
  const header = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
  const started = process.hrtime.bigint()
  const child = spawn('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', ...header, url], { stdio: ['ignore', 'pipe', 'inherit'] })
  let written = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => (written += text))
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('close', resolve))
  const seconds = secondsSince(started)
  const [status, bytes] = written.split(' ').map(Number)
  if (code !== 0 || status === undefined || bytes === undefined) throw new Error(`curl ${url} exited with ${code}`)
  return { status, bytes, seconds }
}

/** PUT of a file's bytes with an exact Content-Length, timed from the request to the response's end. */
export async function upload(url: string, headers: Readonly<Record<string, string>>, file: string, size: number): Promise<Transfer> {
  const started = process.hrtime.bigint()
  const req = request(url, {
    method: 'PUT',
    agent: false,
    headers: { ...headers, 'content-type': 'application/octet-stream', 'content-length': String(size) },
  })
  const response = new Promise<Transfer>((resolve, reject) => {
    req.once('response', (res) => drained(res, started).then(resolve, reject))
    req.once('error', reject)
  })
  await pipeline(createReadStream(file, { highWaterMark: MiB }), req)
  return response
}

export function expectTransfer(what: string, transfer: Transfer, status: number, bytes?: number): Transfer {
  if (transfer.status !== status) throw new Error(`${what}: status ${transfer.status}, expected ${status}`)
  if (bytes !== undefined && transfer.bytes !== bytes) throw new Error(`${what}: ${transfer.bytes} bytes, expected ${bytes}`)
  return transfer
}

// ---------------------------------------------------------------------------------------------
// Keel's REST API

export class Api {
  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {}

  /** Logs in with the bench password and keeps a token cookie, as the route benchmarks do. */
  static async login(url: string): Promise<Api> {
    const authorization = 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64')
    const created = await fetch(`${url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: { authorization } })
    const token = ((await created.json()) as { token: { id: string } }).token.id
    return new Api(url, { cookie: `authenticationToken=${token}` })
  }

  /** A JSON call that must answer `status`; its body, typed by the caller (the bench trusts its own server). */
  async expect<T>(method: string, path: string, status: number, body?: unknown): Promise<T> {
    const init: RequestInit = { method, headers: { ...this.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } }
    if (body !== undefined) init.body = JSON.stringify(body)
    const response = await fetch(this.url + path, init).catch((error: unknown) => {
      // A keep-alive socket the server closed while this process was busy (a benchmark writing its
      // data synchronously) fails the next request sent on it: a GET is safe to send again, once.
      if (method !== 'GET' || !closedUnder(error)) throw error
      return fetch(this.url + path, init)
    })
    const text = await response.text()
    if (response.status !== status) throw new Error(`${method} ${path}: ${response.status} ${text}`)
    return (text === '' ? undefined : JSON.parse(text)) as T
  }
}

const closedUnder = (error: unknown): boolean =>
  error instanceof TypeError && typeof error.cause === 'object' && error.cause !== null && 'code' in error.cause && error.cause.code === 'UND_ERR_SOCKET'

export interface Created {
  readonly id: string
}

/** A halted VM with one disk of `size` bytes on the pool's default SR; returns the VM and its VDI. */
export async function createVm(api: Api, name: string, size: number): Promise<{ vm: string; vdi: string }> {
  const [pool] = await api.expect<Array<{ id: string }>>('GET', '/rest/v0/pools?fields=id', 200)
  const templates = await api.expect<Array<{ id: string; $pool: string }>>('GET', '/rest/v0/vm-templates?fields=id,$pool', 200)
  const template = templates.find((candidate) => candidate.$pool === pool?.id)
  if (pool === undefined || template === undefined) throw new Error('the lab has no pool with a template')
  const params = { name_label: name, template: template.id, vdis: [{ name_label: `${name} disk`, size }] }
  const { id: vm } = await api.expect<Created>('POST', `/rest/v0/pools/${pool.id}/actions/create_vm?sync=true`, 201, params)
  const { $VBDs: vbds } = await api.expect<{ $VBDs: string[] }>('GET', `/rest/v0/vms/${vm}?fields=$VBDs`, 200)
  for (const id of vbds) {
    const vbd = await api.expect<{ VDI?: string; is_cd_drive: boolean }>('GET', `/rest/v0/vbds/${id}?fields=VDI,is_cd_drive`, 200)
    if (!vbd.is_cd_drive && vbd.VDI !== undefined) return { vm, vdi: vbd.VDI }
  }
  throw new Error(`VM ${vm} was created without its disk`)
}

// ---------------------------------------------------------------------------------------------
// Content

/**
 * The raw bytes of the streamed disk: every even 2 MiB block random, every odd one never written.
 * The file is sparse (odd blocks are holes), which reads as the same zeros; holes are cached like
 * data once read, and every comparison reads its files once before measuring.
 */
export function writeRawFile(file: string, size: number): void {
  const fd = openSync(file, 'wx')
  try {
    const block = Buffer.alloc(BLOCK_SIZE)
    for (let index = 0; index < blockCount(size); index += 2) {
      const length = Math.min(BLOCK_SIZE, size - index * BLOCK_SIZE)
      randomFillSync(block, 0, length)
      writeAllSync(fd, block.subarray(0, length), index * BLOCK_SIZE)
    }
    // The file's length is the disk's even when its last block is a hole.
    ftruncateSync(fd, size)
  } finally {
    closeSync(fd)
  }
}

function writeAllSync(fd: number, data: Buffer, position: number): void {
  let written = 0
  while (written < data.length) written += writeSync(fd, data, written, data.length - written, position + written)
}

