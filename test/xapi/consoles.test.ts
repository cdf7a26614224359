import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { RfbViewer } from '../helpers/rfb-client.js'
import { injectFault } from '../helpers/xapi-driver.js'
import { startSimulator, taskOutcome, type RunningSimulator } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

interface Answer {
  /** the status line and headers */
  readonly head: string
  /** what came after the blank line, so far */
  readonly rest: Buffer
  readonly socket: Socket
}

/** Sends `CONNECT <path>` on a raw socket to the host at `location`'s address, and reads up to the end of the answer's headers. */
async function rawConnect(location: string, path: string, headers = ''): Promise<Answer> {
  const url = new URL(location)
  const socket = connect(Number(url.port), url.hostname)
  await once(socket, 'connect')
  socket.write(`CONNECT ${path} HTTP/1.1\r\nHost: ${url.host}\r\n${headers}\r\n`)
  let received = Buffer.alloc(0)
  for (;;) {
    const [chunk] = (await once(socket, 'data')) as [Buffer]
    received = Buffer.concat([received, chunk])
    const end = received.indexOf('\r\n\r\n')
    if (end >= 0) return { head: received.subarray(0, end).toString('latin1'), rest: received.subarray(end + 4), socket }
  }
}

/** Everything the socket sends until the peer closes it. */
async function rest(answer: Answer): Promise<string> {
  const chunks = [answer.rest]
  answer.socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  await once(answer.socket, 'close')
  return Buffer.concat(chunks).toString('latin1')
}

async function vmNamed(xapi: RunningSimulator, session: string, name: string): Promise<[string, Record<string, unknown>]> {
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const found = Object.entries(vms).find(([, vm]) => vm['name_label'] === name)
  if (found === undefined) throw new Error(`no VM ${name}`)
  return found
}

t.test('console records and the CONNECT /console handler (issue 31)', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [vmRef, vm] = await vmNamed(xapi, session, 'web-01')

  t.test('a running VM has one rfb console on its host; a halted one has none', async (t) => {
    const consoles = vm['consoles'] as string[]
    t.equal(consoles.length, 1)
    const record = await xapi.call<Record<string, unknown>>('console.get_record', [session, consoles[0]])
    t.match(record, { protocol: 'rfb', VM: vmRef, other_config: {} })
    const hostAddress = await xapi.call<string>('host.get_address', [session, vm['resident_on']])
    t.equal(record['location'], `http://${hostAddress}:${new URL(xapi.url).port}/console?ref=${consoles[0]}`)
    const [, halted] = await vmNamed(xapi, session, 'staging-app')
    t.same(halted['consoles'], [])
    const dom0s = Object.values(await xapi.call<Records>('VM.get_all_records', [session])).filter((each) => each['is_control_domain'] === true)
    t.ok(dom0s.length > 0 && dom0s.every((dom0) => (dom0['consoles'] as string[]).length === 1), 'each host\u2019s control domain has one')
  })

  t.test('CONNECT with a valid session: 200, then RFB 3.8 both ways (a key typed is echoed)', async (t) => {
    const [ref] = vm['consoles'] as string[]
    const location = await xapi.call<string>('console.get_location', [session, ref])
    const answer = await rawConnect(location, `/console?ref=${ref}&session_id=${session}`)
    t.equal(answer.head, 'HTTP/1.1 200 OK')
    const viewer = new RfbViewer((bytes) => answer.socket.write(bytes))
    answer.socket.on('data', (bytes: Buffer) => viewer.receive(bytes))
    if (answer.rest.length > 0) viewer.receive(answer.rest)
    await viewer.until(() => viewer.width > 0)
    t.equal(viewer.name, 'web-01')
    const updates = viewer.updates
    viewer.requestUpdate(false)
    await viewer.until(() => viewer.updates > updates)
    const column = 'web-01 login: '.length
    t.notOk(viewer.cellLit(column, 7))
    const next = viewer.updates
    viewer.requestUpdate(true)
    viewer.key('r'.charCodeAt(0))
    await viewer.until(() => viewer.updates > next)
    t.ok(viewer.cellLit(column, 7), 'the key is echoed')
    answer.socket.destroy()
  })

  t.test('the session in the cookie, as some clients send it, and the VM\u2019s own ref (its default console)', async (t) => {
    const location = await xapi.call<string>('console.get_location', [session, (vm['consoles'] as string[])[0]])
    const answer = await rawConnect(location, `/console?ref=${vmRef}`, `Cookie: session_id=${session}\r\n`)
    t.equal(answer.head, 'HTTP/1.1 200 OK')
    answer.socket.destroy()
  })

  t.test('refusals: a bad session 401, a ref that is no console 500, another path 404; nothing served', async (t) => {
    const [ref] = vm['consoles'] as string[]
    const location = await xapi.call<string>('console.get_location', [session, ref])
    const badSession = await rawConnect(location, `/console?ref=${ref}&session_id=OpaqueRef:00000000-0000-0000-0000-000000000000`)
    t.match(badSession.head, /^HTTP\/1\.1 401 Unauthorised\r\n/)
    t.match(badSession.head, /\r\nWWW-Authenticate: Basic realm="xapi"/)
    t.notMatch(await rest(badSession), /RFB/, 'no RFB was sent')
    const noSession = await rawConnect(location, `/console?ref=${ref}`)
    t.match(noSession.head, /^HTTP\/1\.1 401 /)
    const unknown = await rawConnect(location, `/console?ref=OpaqueRef:nothing&session_id=${session}`)
    t.match(unknown.head, /^HTTP\/1\.1 500 /)
    t.notMatch(await rest(unknown), /RFB/)
    const path = await rawConnect(location, `/other?ref=${ref}&session_id=${session}`)
    t.match(path.head, /^HTTP\/1\.1 404 /)
  })

  t.test('a paused VM keeps its console record, but XAPI serves only a running one', async (t) => {
    const [, paused] = await vmNamed(xapi, session, 'ci-runner-01')
    const [ref] = paused['consoles'] as string[]
    if (ref === undefined) throw new Error('the paused VM has no console')
    const answer = await rawConnect(await xapi.call<string>('console.get_location', [session, ref]), `/console?ref=${ref}&session_id=${session}`)
    t.match(answer.head, /^HTTP\/1\.1 500 /)
  })

  t.test('a console asked on another host than its VM\u2019s is refused', async (t) => {
    const [ref] = vm['consoles'] as string[]
    const location = new URL(await xapi.call<string>('console.get_location', [session, ref]))
    const hosts = await xapi.call<Records>('host.get_all_records', [session])
    const other = Object.entries(hosts).find(([hostRef]) => hostRef !== vm['resident_on'])?.[1]
    location.hostname = String(other?.['address'])
    const answer = await rawConnect(location.href, `/console?ref=${ref}&session_id=${session}`)
    t.match(answer.head, /^HTTP\/1\.1 500 /)
  })

  t.test('the VM halting destroys its console (with its events) and closes the connection; starting it makes a new one', async (t) => {
    const [ref] = vm['consoles'] as string[]
    if (ref === undefined) throw new Error('no console')
    const location = await xapi.call<string>('console.get_location', [session, ref])
    const answer = await rawConnect(location, `/console?ref=${ref}&session_id=${session}`)
    t.equal(answer.head, 'HTTP/1.1 200 OK')
    const { token } = await xapi.call<{ token: string }>('event.from', [session, ['console'], '', 0])
    const closed = once(answer.socket, 'close')
    const stop = await xapi.call<string>('Async.VM.hard_shutdown', [session, vmRef])
    t.match(await taskOutcome(xapi, session, stop), { status: 'success' })
    await closed
    t.pass('the connection is closed')
    const { events } = await xapi.call<{ events: Array<{ operation: string; ref: string }> }>('event.from', [session, ['console'], token, 0])
    t.same(events.map((event) => [event.operation, event.ref]), [['del', ref]])
    t.same(await xapi.call('VM.get_consoles', [session, vmRef]), [])
    const refused = await rawConnect(location, `/console?ref=${ref}&session_id=${session}`)
    t.match(refused.head, /^HTTP\/1\.1 500 /, 'the halted VM\u2019s console ref is refused')
    const start = await xapi.call<string>('Async.VM.start', [session, vmRef, false, false])
    t.match(await taskOutcome(xapi, session, start), { status: 'success' })
    const [again] = await xapi.call<string[]>('VM.get_consoles', [session, vmRef])
    t.ok(again !== undefined && again !== ref, 'a new console')
  })
})

t.test('a host stopped (the stop_member fault) breaks its consoles\u2019 connections and answers no other', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const master = await xapi.call<string>('pool.get_master', [session, (await xapi.call<string[]>('pool.get_all', [session]))[0]])
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const onMember = Object.values(vms).find((vm) => vm['power_state'] === 'Running' && vm['is_control_domain'] === false && vm['resident_on'] !== master)
  const [ref] = (onMember?.['consoles'] ?? []) as string[]
  if (onMember === undefined || ref === undefined) throw new Error('the demo lab has a VM running on a member')
  const location = await xapi.call<string>('console.get_location', [session, ref])
  const answer = await rawConnect(location, `/console?ref=${ref}&session_id=${session}`)
  t.equal(answer.head, 'HTTP/1.1 200 OK')
  const broken = once(answer.socket, 'close')
  await injectFault(xapi.url, { stop_member: new URL(location).hostname })
  await broken
  t.pass('the open connection is broken')
  const url = new URL(location)
  const again = connect(Number(url.port), url.hostname)
  const received: Buffer[] = []
  again.on('data', (chunk: Buffer) => received.push(chunk))
  again.on('error', () => undefined)
  await once(again, 'connect')
  again.write(`CONNECT /console?ref=${ref}&session_id=${session} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`)
  await once(again, 'close')
  t.same(received, [], 'a new one is reset, unanswered')
})
