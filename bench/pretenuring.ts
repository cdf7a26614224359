// V8's allocation-site pretenuring on a bare node:http server, without Keel (issue 30). Run as
// `node dist/bench/pretenuring.js` after a build; about 40 s a case.
//
// The server answers GET /one with a small body at once and any other path with a 3 MB listing
// built per request, written 64 KiB at a time, one chunk per turn of the event loop, as Keel's
// uncached listings are. Each request goes through a context holding its request and response,
// made before the route is known: an object literal (`literal`) or an instance of a class
// (`class`); with `none`, /one makes no context; with `queue`, /one makes no context either and gets a queue
// of its own for its head (`Array.of()` in place of node's `outputData`, the fix of 2026-11-27 12:20); with
// `write`, /one makes no context and sends its head by an empty write before the body, so that the head never
// goes through node's queue (as src/http/response.ts does since 2026-11-27 15:10).
// Each case runs the server with `--max-semi-space-size=4` (as the service)
// and `--trace-gc-nvp`, optionally 20 s of 50 connections on the listing first (V8 decides on a literal once 100 of its
// objects were seen alive), then 50
// connections on /one (3 s warm-up, 8 s measured), and prints the bytes promoted per request in
// the measured window and the server's CPU time per request.
//
// With the literal, the listings' contexts outlive their young collections, V8 switches that
// literal to allocating in the old generation (`--trace-pretenuring-statistics` prints
// `maybe tenure => tenure`), and then every /one request's context is born old: dead there, it
// still holds its request and response, which the young collections keep until they are promoted.
// Without a context, the 219 bytes a request that remain are node's: the array each response queues
// its head in (`this.outputData = []` in node's OutgoingMessage) is pretenured the same way, and a
// head queued there before a Buffer body is promoted. A probe with V8's %InYoungGeneration found that
// array born old in every /one response after the listings; the request's listener table, its stream's
// arrays and `rawTrailers` were born old too, but hold nothing young in a GET without a body.
// Pinned to cores 0 (server) and 1 (load) when `taskset` is there.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { LoadRequest, LoadResult } from './load-child.js'

type ContextKind = 'none' | 'queue' | 'write' | 'literal' | 'class'

interface Case {
  readonly context: ContextKind
  readonly listingsFirst: boolean
  readonly flags: readonly string[]
}

const here = fileURLToPath(new URL('.', import.meta.url))
const pin = spawnSync('taskset', ['-c', '0', 'true']).status === 0
const pinned = (core: number, command: readonly string[]): [string, string[]] => {
  const [head, ...rest] = pin ? ['taskset', '-c', String(core), ...command] : command
  return [head as string, rest]
}

class Context {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  constructor(req: IncomingMessage, res: ServerResponse) {
    this.req = req
    this.res = res
  }
}

function serve(kind: ContextKind): void {
  const records = Array.from({ length: 50_000 }, (_, i) => ({ id: `vm-${String(i).padStart(8, '0')}`, name_label: `vm ${i}`, power_state: i % 3 === 0 ? 'Halted' : 'Running' }))
  const one = Buffer.from(JSON.stringify({ ...records[1], description: 'x'.repeat(400) }))
  const turns: Array<() => void> = []
  const next = (): void => {
    turns.shift()?.()
    if (turns.length > 0) setImmediate(next)
  }
  const turn = (): Promise<void> =>
    new Promise((resolve) => {
      if (turns.push(resolve) === 1) setImmediate(next)
    })
  const drained = (res: ServerResponse): Promise<void> => new Promise((resolve) => res.once('drain', resolve))
  async function list(ctx: { readonly res: ServerResponse }): Promise<void> {
    ctx.res.writeHead(200, { 'content-type': 'application/json' })
    let batch: Buffer[] = []
    let size = 0
    for (const record of records) {
      if (record.power_state !== 'Running') continue
      const piece = Buffer.from(`${JSON.stringify({ ...record, href: `/rest/v0/vms/${record.id}` })},`)
      batch.push(piece)
      size += piece.length
      if (size < 65536) continue
      const room = ctx.res.write(Buffer.concat(batch, size))
      batch = []
      size = 0
      if (!room) await drained(ctx.res)
      await turn()
      if (ctx.res.destroyed) return
    }
    ctx.res.end(Buffer.concat(batch, size))
  }
  // One function makes every route's context, as a router does.
  const contextOf = (req: IncomingMessage, res: ServerResponse): { readonly req: IncomingMessage; readonly res: ServerResponse } =>
    kind === 'class' ? new Context(req, res) : { req, res }
  const answer = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': one.length })
    res.end(one)
  }
  const answerByWrite = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': one.length })
    res.socket?.cork()
    res.write('', 'latin1')
    res.end(one)
  }
  const server = createServer((req, res) => {
    if (kind === 'write' && req.url === '/one') return answerByWrite(res)
    if (kind === 'queue' && req.url === '/one') (res as ServerResponse & { outputData: unknown[] }).outputData = Array.of()
    if ((kind === 'none' || kind === 'queue') && req.url === '/one') return answer(res)
    // One context for every route, made before the route is known, as a router's is.
    const ctx = contextOf(req, res)
    if (req.url === '/one') answer(ctx.res)
    else list(ctx).catch(() => res.destroy())
  })
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`))
}

interface Collection {
  readonly kind: string
  readonly promoted: number
}

async function load(url: string, warmup: number, duration: number): Promise<LoadResult> {
  const request: LoadRequest = { url, headers: {}, connections: 50, warmup, duration, uniquePaths: false }
  const [command, args] = pinned(1, [process.execPath, join(here, 'load-child.js'), JSON.stringify(request)])
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (data: Buffer) => (out += data.toString()))
  await new Promise((resolve) => child.once('exit', resolve))
  return JSON.parse(out) as LoadResult
}

const cpuMs = (child: ChildProcess): number => {
  const fields = (readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

async function run({ context, listingsFirst, flags }: Case): Promise<string> {
  const [command, args] = pinned(0, [process.execPath, '--max-semi-space-size=4', '--trace-gc-nvp', ...flags, fileURLToPath(import.meta.url), 'serve', context])
  const server = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  const collections: Collection[] = []
  const url = await new Promise<string>((resolve) =>
    createInterface({ input: server.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const listening = /listening on (\S+)/.exec(line)
      if (listening?.[1] !== undefined) resolve(listening[1])
      const gc = /gc=(\w+) .* promoted=(\d+)/.exec(line)
      if (gc?.[1] !== undefined) collections.push({ kind: gc[1], promoted: Number(gc[2]) })
    }),
  )
  try {
    const listings = listingsFirst ? (await load(`${url}/list`, 0, 20)).requests * 20 : 0
    const measured = load(`${url}/one`, 3, 8)
    // The load child's measured run starts after its warm-up.
    await new Promise((resolve) => setTimeout(resolve, 3000))
    const [cpu, seen] = [cpuMs(server), collections.length]
    const result = await measured
    const requests = result.requests * 8
    const window = collections.slice(seen)
    const promoted = window.reduce((sum, collection) => sum + collection.promoted, 0)
    const fullGcs = window.filter((collection) => collection.kind === 'mc').length
    const name = `context ${context}${listingsFirst ? `, after ${listings.toFixed(0)} listings in 20 s` : ''}${flags.length > 0 ? `, ${flags.join(' ')}` : ''}`
    return `| ${name} | ${(promoted / requests).toFixed(0)} | ${(((cpuMs(server) - cpu) * 1000) / requests).toFixed(1)} | ${fullGcs} | ${result.requests.toFixed(0)} |`
  } finally {
    server.kill()
  }
}

if (process.argv[2] === 'serve') {
  serve((process.argv[3] ?? 'none') as ContextKind)
} else {
  const cases: Case[] = [
    { context: 'literal', listingsFirst: false, flags: [] },
    { context: 'literal', listingsFirst: true, flags: [] },
    { context: 'literal', listingsFirst: true, flags: ['--no-allocation-site-pretenuring'] },
    { context: 'class', listingsFirst: true, flags: [] },
    { context: 'none', listingsFirst: true, flags: [] },
    { context: 'queue', listingsFirst: true, flags: [] },
    { context: 'write', listingsFirst: true, flags: [] },
  ]
  const lines = ['| case | bytes promoted a request | µs of server CPU a request | full collections | req/s |', '|---|---|---|---|---|']
  for (const item of cases) lines.push(await run(item))
  process.stdout.write(`${lines.join('\n')}\n`)
}
