import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import pino from 'pino'
import t from 'tap'
import type { ConsoleViewer } from '../../src/consoles/sources.js'
import type { XoRecord } from '../../src/driver/types.js'
import { xapiConsoles, type ConsoleTunnels } from '../../src/driver/xapi/console.js'
import { XapiError, type XapiPool } from '../../src/driver/xapi/types.js'
import type { TestScope } from '../helpers/lab.js'
import { simulatedPool } from '../helpers/xapi-driver.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
import { certificateFile } from '../../src/simulator/certificate.js'

const VM: XoRecord = { id: 'vm-1', type: 'VM', _xapiRef: 'OpaqueRef:vm-1' }
const HOST: XoRecord = { id: 'host-1', type: 'host', controlDomain: 'dom0-1' }
const DOM0: XoRecord = { id: 'dom0-1', type: 'VM-controller', _xapiRef: 'OpaqueRef:dom0-1' }
const LOCATION = 'https://192.0.2.7/console?ref=OpaqueRef:console-1'

interface Fake {
  readonly driver: ConsoleTunnels
  /** the locations tunnels were asked for */
  readonly asked: string[]
  /** both ends of the next tunnel, once the relay has it */
  next(): Promise<{ near: Socket; far: Socket }>
  /** resolves once pool.settled() is called; calling what it resolves with settles it */
  settling(): Promise<() => void>
}

/** A driver whose pool's consoles are a TCP server of the test's: each tunnel is a real socket, its far end the test's to drive. */
async function fakeDriver(t: TestScope, refuse?: Error): Promise<Fake> {
  const accepted: Socket[] = []
  const server = createServer((socket) => accepted.push(socket))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of accepted) socket.destroy()
    server.close()
  })
  const { port } = server.address() as AddressInfo
  const asked: string[] = []
  const tunnels: Array<(ends: { near: Socket; far: Socket }) => void> = []
  const settles: Array<(settle: () => void) => void> = []
  const pool: XapiPool = {
    poolId: 'pool-1',
    call: async <T>(method: string, params: readonly unknown[]) => {
      if (method === 'VM.get_consoles') return (params[0] === 'OpaqueRef:vm-1' || params[0] === 'OpaqueRef:dom0-1' ? ['OpaqueRef:vt', 'OpaqueRef:console-1'] : []) as T
      if (method === 'console.get_record') return (params[0] === 'OpaqueRef:vt' ? { protocol: 'vt100', location: 'wrong' } : { protocol: 'rfb', location: LOCATION }) as T
      throw new XapiError('MESSAGE_METHOD_UNKNOWN', [method])
    },
    callAsync: () => Promise.reject(new Error('not used')),
    request: () => Promise.reject(new Error('not used')),
    settled: () => new Promise((resolve) => settles.shift()?.(() => resolve())),
  }
  const objects = new Map([VM, HOST, DOM0].map((object) => [object.id, object]))
  const driver: ConsoleTunnels = {
    locate: (record) => (typeof record['_xapiRef'] === 'string' ? { pool, ref: record['_xapiRef'], cls: 'VM' } : undefined),
    getObject: (id) => objects.get(id),
    tunnel: async (_pool, location) => {
      asked.push(location)
      if (refuse !== undefined) throw refuse
      const near = connect(port, '127.0.0.1')
      const [[far]] = await Promise.all([once(server, 'connection') as Promise<[Socket]>, once(near, 'connect')])
      // Handed over once the relay has taken the socket (this promise resolved to it).
      setImmediate(() => tunnels.shift()?.({ near, far }))
      return near
    },
  }
  return {
    driver,
    asked,
    next: () => new Promise((resolve) => tunnels.push(resolve)),
    settling: () => new Promise((resolve) => settles.push(resolve)),
  }
}

interface Seen {
  readonly viewer: ConsoleViewer
  /** resolves once this many bytes have been sent to the viewer */
  bytes(count: number): Promise<string>
  /** the callbacks `drained` was given */
  readonly resumes: Array<() => void>
  readonly ended: Promise<{ reason: string; failed: boolean }>
  /** whether the viewer has been told the console ended */
  readonly over: () => boolean
  /** what `send` answers: false, a full viewer */
  room: boolean
}

function viewer(): Seen {
  let end: (value: { reason: string; failed: boolean }) => void = () => undefined
  let over = false
  const received: Buffer[] = []
  const waits: Array<{ count: number; resolve: (text: string) => void }> = []
  const text = (): string => Buffer.concat(received).toString()
  const seen: Seen = {
    bytes: (count) => new Promise((resolve) => (text().length >= count ? resolve(text()) : waits.push({ count, resolve }))),
    resumes: [],
    ended: new Promise((resolve) => (end = resolve)),
    over: () => over,
    room: true,
    viewer: {
      send: (bytes) => {
        received.push(bytes)
        for (const wait of waits.filter((each) => text().length >= each.count)) {
          waits.splice(waits.indexOf(wait), 1)
          wait.resolve(text())
        }
        return seen.room
      },
      drained: (resume) => seen.resumes.push(resume),
      ended: (reason, failed = false) => {
        over = true
        end({ reason, failed })
      },
    },
  }
  return seen
}

/** Resolves with everything the socket has delivered once it has delivered `count` bytes. */
function read(socket: Socket, count: number): Promise<string> {
  const chunks: Buffer[] = []
  return new Promise((resolve) => {
    const take = (bytes: Buffer): void => {
      chunks.push(bytes)
      if (Buffer.concat(chunks).length < count) return
      socket.off('data', take)
      resolve(Buffer.concat(chunks).toString())
    }
    socket.on('data', take)
  })
}

const log = pino({ level: 'silent' })

t.test('the relay: bytes both ways on the rfb console\u2019s location, the viewer\u2019s early bytes first (issue 31)', async (t) => {
  const fake = await fakeDriver(t)
  const link = xapiConsoles(fake.driver, log)(VM)
  const seen = viewer()
  const tunnel = fake.next()
  link.start(seen.viewer)
  link.receive(Buffer.from('early'))
  const { far } = await tunnel
  t.same(fake.asked, [LOCATION], 'the rfb console\u2019s location, not the vt100 one\u2019s')
  const fromViewer = read(far, 'early-late'.length)
  link.receive(Buffer.from('-late'))
  t.equal(await fromViewer, 'early-late')
  far.write('RFB 003.008\n')
  t.equal(await seen.bytes(12), 'RFB 003.008\n')
  const closed = once(far, 'close')
  link.close()
  await closed
  t.pass('the viewer gone closes the pool\u2019s connection')
  t.notOk(seen.over(), 'the viewer, gone, is told nothing')
})

t.test('a host\u2019s console is its control domain\u2019s', async (t) => {
  const fake = await fakeDriver(t)
  const link = xapiConsoles(fake.driver, log)(HOST)
  const tunnel = fake.next()
  link.start(viewer().viewer)
  await tunnel
  t.same(fake.asked, [LOCATION])
  link.close()
})

t.test('a full viewer pauses the pool\u2019s socket until it has room again', async (t) => {
  const fake = await fakeDriver(t)
  const link = xapiConsoles(fake.driver, log)(VM)
  const seen = viewer()
  seen.room = false
  const tunnel = fake.next()
  link.start(seen.viewer)
  const { near, far } = await tunnel
  far.write('first')
  await seen.bytes(5)
  t.ok(near.isPaused(), 'the pool\u2019s socket is not read while the viewer is full')
  t.equal(seen.resumes.length, 1, 'the relay waits for the viewer to drain')
  seen.room = true
  seen.resumes[0]?.()
  t.notOk(near.isPaused(), 'read again once it has')
  far.write('-second')
  t.equal(await seen.bytes(12), 'first-second')
  link.close()
})

t.test('the pool closing the console ends it once the index has caught up', async (t) => {
  const fake = await fakeDriver(t)
  const link = xapiConsoles(fake.driver, log)(VM)
  const seen = viewer()
  const tunnel = fake.next()
  link.start(seen.viewer)
  const { far } = await tunnel
  const settling = fake.settling()
  far.destroy()
  const settle = await settling
  t.notOk(seen.over(), 'not before the index holds what the pool did (a VM that stopped is then said to have stopped)')
  settle()
  t.same(await seen.ended, { reason: 'the pool closed the console', failed: false })
})

t.test('a console the pool refuses ends as failed, with the pool\u2019s reason', async (t) => {
  const fake = await fakeDriver(t, new XapiError('HTTP_HANDLER_FAILED', ['/console', '500']))
  const seen = viewer()
  xapiConsoles(fake.driver, log)(VM).start(seen.viewer)
  t.same(await seen.ended, { reason: "the pool's console could not be opened: HTTP_HANDLER_FAILED(/console, 500)", failed: true })
  const unlocated = viewer()
  xapiConsoles(fake.driver, log)({ id: 'elsewhere', type: 'VM' }).start(unlocated.viewer)
  t.match(await unlocated.ended, { reason: /HANDLE_INVALID/, failed: true })
  t.same(fake.asked, [LOCATION], 'an object in no pool asks for no tunnel')
})

t.test('a tunnel through the simulator: the pool\u2019s RFB with the driver\u2019s session, ended with the pool\u2019s connection', async (t) => {
  const { driver, pool, simulator } = await simulatedPool(t)
  const session = await simulator.login()
  const vms = await simulator.call<Record<string, { power_state: string; is_control_domain: boolean; consoles: string[] }>>('VM.get_all_records', [session])
  const running = Object.values(vms).find((vm) => vm.power_state === 'Running' && !vm.is_control_domain)
  const location = await simulator.call<string>('console.get_location', [session, running?.consoles[0]])
  const [xapiPool] = driver.pools
  if (xapiPool === undefined) throw new Error('no pool')
  const socket = await driver.tunnel(xapiPool, location)
  const [first] = (await once(socket, 'data')) as [Buffer]
  t.equal(first.toString(), 'RFB 003.008\n')
  const closed = once(socket, 'close')
  await pool.disconnect()
  await closed
  t.pass('closed with the connection')
})

t.test('a tunnel over TLS, held to the pool\u2019s pinned certificate', async (t) => {
  const simulator = await startSimulator(t, { tls: { names: ['127.0.0.1'] } })
  const pem = readFileSync(certificateFile(simulator.dataDir), 'utf8')
  const fingerprint = new X509Certificate(pem.slice(pem.indexOf('-----BEGIN CERTIFICATE-----'))).fingerprint256
  const driver = new XapiDriver({ graceDelay: 0 })
  t.teardown(() => driver.close())
  await driver.connect({ host: simulator.url, username: 'root', password: PASSWORD, allowUnauthorized: false, fingerprint, readOnly: false }, new AbortController().signal)
  const [pool] = driver.pools
  if (pool === undefined) throw new Error('no pool')
  // The simulator's certificate is its own: asked through the driver's connection, which pins it.
  const vms = await pool.call<Record<string, { power_state: string; is_control_domain: boolean; consoles: string[] }>>('VM.get_all_records', [])
  const running = Object.values(vms).find((vm) => vm.power_state === 'Running' && !vm.is_control_domain)
  const location = await pool.call<string>('console.get_location', [running?.consoles[0]])
  t.match(location, /^https:\/\/127\.0\.0\.\d+:\d+\/console\?ref=OpaqueRef:/)
  const socket = await driver.tunnel(pool, location)
  t.teardown(() => socket.destroy())
  const [first] = (await once(socket, 'data')) as [Buffer]
  t.equal(first.toString(), 'RFB 003.008\n')
})
