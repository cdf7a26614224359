// The service as it runs (`keel serve`), its stderr a pipe that the test stops reading (issue 26).
import type { Test } from 'tap'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../../src/cli/node-flags.js'
import { packageRoot } from '../../src/paths.js'

const cli = join(packageRoot, 'dist/src/cli/main.js')
const PASSWORD = 'stalled-stderr-secret'
const STALL_MS = 10_000
/** What the service's resident memory may grow by during a stall. */
export const MEMORY_BOUND = 32 * 1024 * 1024

export interface Service {
  readonly child: ChildProcessWithoutNullStreams
  readonly url: string
}

export async function serve(dataDir: string, args: readonly string[] = [], nodeFlags: readonly string[] = []): Promise<Service> {
  // As the bin runs it: with the flags and environment of its shebang.
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...nodeFlags, cli, 'serve', '--port', '0', '--data-dir', dataDir, ...args], {
    env: { PATH: process.env['PATH'] ?? '', KEEL_ADMIN_PASSWORD: PASSWORD, ...SERVICE_ENV },
  })
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`keel serve exited with ${code}`)))
  })
  return { child, url }
}

const rssOf = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024

interface Stall {
  /** request ids, in the order they were answered */
  readonly ids: string[]
  /** resident memory just before the stall and at its most during it */
  readonly rssBefore: number
  readonly rssMost: number
}

/** Sends `count` requests one after another, each logging a line of about `lineBytes`; returns their ids. */
async function send(service: Service, count: number, lineBytes: number, ids: string[]): Promise<void> {
  const target = `${service.url}/healthz?pad=${'x'.repeat(lineBytes - 250)}`
  for (let n = 0; n < count; n++) {
    const answer = await fetch(target)
    await answer.arrayBuffer()
    if (answer.status !== 200) throw new Error(`healthz answered ${answer.status}`)
    ids.push(answer.headers.get('x-request-id') ?? '')
  }
}

/**
 * Sends 500 requests with stderr read, so that the service's heap has grown to what they
 * take, then `count` more while stderr is not read, and lets that stall last at least STALL_MS.
 */
export async function stall(service: Service, stderr: Reader, count: number, lineBytes: number): Promise<Stall> {
  const ids: string[] = []
  await send(service, 500, lineBytes, ids)
  stderr.pause()
  const pid = service.child.pid ?? 0
  const started = Date.now()
  const rssBefore = rssOf(pid)
  let rssMost = rssBefore
  const sampler = setInterval(() => (rssMost = Math.max(rssMost, rssOf(pid))), 100)
  try {
    await send(service, count, lineBytes, ids)
    await sleep(Math.max(0, STALL_MS - (Date.now() - started)))
    rssMost = Math.max(rssMost, rssOf(pid))
    return { ids, rssBefore, rssMost }
  } finally {
    clearInterval(sampler)
  }
}

interface Reader {
  readonly text: () => string
  /** Stops reading: the pipe fills, then the service's writes wait. */
  readonly pause: () => void
  readonly resume: () => void
}

export function reading(child: ChildProcessWithoutNullStreams): Reader {
  let text = ''
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()))
  return { text: () => text, pause: () => child.stderr.pause(), resume: () => child.stderr.resume() }
}

type Entry = { readonly reqId: string } | { readonly dropped: number }

/** The request lines and the lines saying how many were dropped, in the order written. */
export function entriesOf(stderr: string): Entry[] {
  const entries: Entry[] = []
  for (const line of stderr.split('\n')) {
    if (line === '') continue
    const parsed = JSON.parse(line) as { msg?: string; reqId?: string; dropped?: number; level?: number }
    if (parsed.msg === 'request' && parsed.reqId !== undefined) entries.push({ reqId: parsed.reqId })
    else if (parsed.dropped !== undefined && parsed.level === 40 && parsed.msg === 'log lines dropped') entries.push({ dropped: parsed.dropped })
  }
  return entries
}

/** Walks the log against the ids answered: each kept line is the next id, each drop line skips as many. */
export function accountFor(t: Test, entries: readonly Entry[], ids: readonly string[]): { kept: number; dropped: number } {
  let next = 0
  let kept = 0
  let dropped = 0
  for (const entry of entries) {
    if ('dropped' in entry) {
      next += entry.dropped
      dropped += entry.dropped
    } else {
      if (entry.reqId !== ids[next]) {
        t.fail(`the line of ${entry.reqId} where ${ids[next]}'s was due (answer ${next})`)
        return { kept, dropped }
      }
      next++
      kept++
    }
  }
  t.equal(next, ids.length, 'every answered request has its line or is counted as dropped')
  return { kept, dropped }
}

export async function metric(service: Service, name: string): Promise<{ value: number; id: string }> {
  const answer = await fetch(`${service.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from(`admin@admin.net:${PASSWORD}`).toString('base64')}` } })
  const text = await answer.text()
  const value = text.split('\n').find((line) => line.startsWith(`${name} `))?.slice(name.length + 1)
  if (answer.status !== 200 || value === undefined) throw new Error(`/metrics answered ${answer.status} without ${name}: ${text.slice(0, 200)}`)
  return { value: Number(value), id: answer.headers.get('x-request-id') ?? '' }
}

export async function stop(service: Service): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve))
  service.child.kill('SIGTERM')
  return exited
}

