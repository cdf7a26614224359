import t from 'tap'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { VPC_OPTS } from '../helpers/disks.js'
import { PASSWORD, startSimulator, type RunningSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

const MiB = 1024 * 1024
const SIZE = 6 * MiB

type Records = Record<string, Record<string, unknown>>

async function scratchVdi(xapi: RunningSimulator, session: string): Promise<string> {
  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const sr = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === true)?.[0]
  return xapi.call<string>('VDI.create', [session, { name_label: 'transfer', SR: sr, virtual_size: SIZE, type: 'user', sharable: false, read_only: false, other_config: {} }])
}

/** Content with data in some blocks and zeros elsewhere, so allocation matters. */
function content(): Buffer {
  const bytes = Buffer.alloc(SIZE)
  randomBytes(MiB).copy(bytes, 0)
  randomBytes(512 * 1024).copy(bytes, 4 * MiB + 4096)
  return bytes
}

t.test('PUT /import_raw_vdi then GET /export_raw_vdi moves the bytes, raw and VHD; qemu-img reads the VHD', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vdi = await scratchVdi(xapi, session)
  const bytes = content()
  const importTask = await xapi.call<string>('task.create', [session, 'upload', ''])
  const put = await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${importTask}&vdi=${vdi}&format=raw`, { method: 'PUT', body: bytes })
  t.equal(put.status, 200)
  await put.arrayBuffer()
  t.match(await taskOutcome(xapi, session, importTask), { status: 'success' })

  const exportTask = await xapi.call<string>('task.create', [session, 'download', ''])
  const raw = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&task_id=${exportTask}&vdi=${vdi}&format=raw`)
  t.equal(raw.status, 200)
  t.equal(raw.headers.get('content-length'), null, 'the body ends with the connection, as XAPI sends it')
  t.ok(Buffer.from(await raw.arrayBuffer()).equals(bytes), 'the raw export is what was imported')
  t.match(await taskOutcome(xapi, session, exportTask), { status: 'success' })

  const uuid = await xapi.call<string>('VDI.get_uuid', [session, vdi])
  const vhd = await fetch(`${xapi.url}/export_raw_vdi?vdi=${uuid}&format=vhd`, { headers: { authorization: 'Basic ' + Buffer.from(`root:${PASSWORD}`).toString('base64') } })
  t.equal(vhd.status, 200, 'by uuid, with HTTP Basic credentials')
  const dir = mkdtempSync(join(tmpdir(), 'keel-xapi-vhd-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'disk.vhd'), Buffer.from(await vhd.arrayBuffer()))
  const run = promisify(execFile)
  // The size from the footer, not from the CHS geometry qemu-img would otherwise round to.
  const info = JSON.parse((await run('qemu-img', ['info', '--output=json', '--image-opts', VPC_OPTS(join(dir, 'disk.vhd'))])).stdout) as { format: string; 'virtual-size': number }
  t.match(info, { format: 'vpc', 'virtual-size': SIZE })
  await run('qemu-img', ['convert', '--image-opts', VPC_OPTS(join(dir, 'disk.vhd')), '-O', 'raw', join(dir, 'disk.raw')])
  t.ok(readFileSync(join(dir, 'disk.raw')).equals(bytes), 'qemu-img reads back the same bytes')

  // A VHD import lands byte for byte too.
  const again = await scratchVdi(xapi, session)
  const vhdTask = await xapi.call<string>('task.create', [session, 'vhd upload', ''])
  await (await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${vhdTask}&vdi=${again}&format=vhd`, { method: 'PUT', body: readFileSync(join(dir, 'disk.vhd')) })).arrayBuffer()
  t.match(await taskOutcome(xapi, session, vhdTask), { status: 'success' })
  const back = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${again}`)
  t.ok(Buffer.from(await back.arrayBuffer()).equals(bytes))
})

t.test('bad transfers are refused or fail their task, and leave the disk as it was', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vdi = await scratchVdi(xapi, session)
  const url = (path: string, query: string) => `${xapi.url}${path}?${query}`

  const noSession = await fetch(url('/export_raw_vdi', `vdi=${vdi}`))
  t.equal(noSession.status, 401)
  const task = await xapi.call<string>('task.create', [session, 'bad', ''])
  const badSession = await fetch(url('/export_raw_vdi', `session_id=OpaqueRef:nope&task_id=${task}&vdi=${vdi}`))
  t.equal(badSession.status, 401)
  t.match(await taskOutcome(xapi, session, task), { status: 'failure', error_info: ['SESSION_INVALID', 'OpaqueRef:nope'] })
  t.equal((await fetch(url('/export_raw_vdi', `session_id=${session}&vdi=OpaqueRef:nope`))).status, 404)
  t.equal((await fetch(url('/export_raw_vdi', `session_id=${session}&vdi=${vdi}&format=qcow2`))).status, 400)
  t.equal((await fetch(url('/export_raw_vdi', `session_id=${session}&vdi=${vdi}&base=${vdi}&format=raw`))).status, 400)
  t.equal((await fetch(url('/export_raw_vdi', `session_id=${session}`))).status, 400)

  const before = Buffer.from(await (await fetch(url('/export_raw_vdi', `session_id=${session}&vdi=${vdi}`))).arrayBuffer())
  const short = await xapi.call<string>('task.create', [session, 'short', ''])
  const put = await fetch(url('/import_raw_vdi', `session_id=${session}&task_id=${short}&vdi=${vdi}&format=raw`), { method: 'PUT', body: randomBytes(MiB) })
  t.equal(put.status, 200, 'an import answers 200 at once, as XAPI does: the task tells')
  await put.arrayBuffer().catch(() => undefined)
  t.match(await taskOutcome(xapi, session, short), { status: 'failure', error_info: ['VDI_IO_ERROR'] })
  const garbage = await xapi.call<string>('task.create', [session, 'garbage', ''])
  await (await fetch(url('/import_raw_vdi', `session_id=${session}&task_id=${garbage}&vdi=${vdi}&format=vhd`), { method: 'PUT', body: randomBytes(MiB) })).arrayBuffer().catch(() => undefined)
  t.match(await taskOutcome(xapi, session, garbage), { status: 'failure', error_info: ['VDI_IO_ERROR'] })
  const after = Buffer.from(await (await fetch(url('/export_raw_vdi', `session_id=${session}&vdi=${vdi}`))).arrayBuffer())
  t.ok(after.equals(before), 'the refused imports changed nothing')
  t.equal((await fetch(url('/import_raw_vdi', `vdi=${vdi}`), { method: 'PUT', body: 'x' })).status, 401)
})

t.test('GET /export sends an XVA that tar reads, and PUT /import makes a new VM of it', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const [ref, vm] = Object.entries(vms).find(([, r]) => r['power_state'] === 'Halted' && r['is_a_template'] === false && (r['VBDs'] as string[]).length > 0) ?? []
  if (ref === undefined || vm === undefined) throw new Error('a halted VM with disks')
  const dir = mkdtempSync(join(tmpdir(), 'keel-xapi-xva-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const task = await xapi.call<string>('task.create', [session, 'export', ''])
  const response = await fetch(`${xapi.url}/export?session_id=${session}&task_id=${task}&ref=${ref}`)
  t.equal(response.status, 200)
  t.equal(response.headers.get('content-length'), null)
  const xva = Buffer.from(await response.arrayBuffer())
  writeFileSync(join(dir, 'vm.xva'), xva)
  t.match(await taskOutcome(xapi, session, task), { status: 'success' })
  const listing = (await promisify(execFile)('tar', ['-tf', join(dir, 'vm.xva')])).stdout.split('\n')
  t.equal(listing[0], 'ova.xml', 'tar lists ova.xml first')

  const importTask = await xapi.call<string>('task.create', [session, 'import', ''])
  const put = await fetch(`${xapi.url}/import?session_id=${session}&task_id=${importTask}`, { method: 'PUT', body: xva })
  t.equal(put.status, 200)
  await put.arrayBuffer()
  const done = await taskOutcome(xapi, session, importTask)
  t.match(done, { status: 'success', result: /^<value><array><data><value>OpaqueRef:[^<]+<\/value><\/data><\/array><\/value>$/ })
  const imported = /OpaqueRef:[^<]+/.exec(String(done['result']))?.[0] ?? ''
  t.match(await xapi.call('VM.get_record', [session, imported]), { name_label: vm['name_label'], power_state: 'Halted' })
  t.equal((await xapi.call<string[]>('VM.get_VBDs', [session, imported])).length, (vm['VBDs'] as string[]).length)

  const running = Object.entries(vms).find(([, r]) => r['power_state'] === 'Running' && r['is_control_domain'] === false)?.[0]
  const refused = await fetch(`${xapi.url}/export?session_id=${session}&ref=${running}`)
  t.equal(refused.status, 500)
  t.match(await refused.text(), /VM_BAD_POWER_STATE/)
  t.equal((await fetch(`${xapi.url}/export?session_id=${session}&ref=${ref}&use_compression=lzma`)).status, 400)
  const garbage = await xapi.call<string>('task.create', [session, 'garbage', ''])
  const before = (await xapi.call<string[]>('VM.get_all', [session])).length
  await (await fetch(`${xapi.url}/import?session_id=${session}&task_id=${garbage}`, { method: 'PUT', body: randomBytes(64 * 1024) })).arrayBuffer().catch(() => undefined)
  t.match(await taskOutcome(xapi, session, garbage), { status: 'failure' })
  t.equal((await xapi.call<string[]>('VM.get_all', [session])).length, before, 'a broken XVA makes no VM')
})

t.test('a VDI on an SR local to another host: the disk handlers answer 302 there with the same query, and that host serves it', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const hosts = await xapi.call<Records>('host.get_all_records', [session])
  const pbds = await xapi.call<Records>('PBD.get_all_records', [session])
  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const master = Object.values(await xapi.call<Records>('pool.get_all_records', [session]))[0]?.['master']
  const [local, owner] =
    Object.entries(srs)
      .filter(([, r]) => r['content_type'] === 'user' && r['shared'] === false)
      .map(([ref, r]) => [ref, pbds[String((r['PBDs'] as string[])[0])]?.['host']] as const)
      .find(([, host]) => host !== undefined && host !== master) ?? []
  if (local === undefined || owner === undefined) throw new Error('the demo lab has a local SR on a member')
  const address = String(hosts[String(owner)]?.['address'])
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'local', SR: local, virtual_size: SIZE, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const bytes = content()
  const port = new URL(xapi.url).port

  const task = await xapi.call<string>('task.create', [session, 'upload', ''])
  const query = `session_id=${session}&vdi=${vdi}&format=raw&task_id=${task}`
  const put = await fetch(`${xapi.url}/import_raw_vdi?${query}`, { method: 'PUT', body: bytes, redirect: 'manual' })
  t.equal(put.status, 302, 'the master sends the upload to the SR\u2019s host')
  t.equal(put.headers.get('location'), `http://${address}:${port}/import_raw_vdi?${query}`)
  t.match(await xapi.call('task.get_record', [session, task]), { status: 'pending' }, 'the task is left to that host')
  const exported = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}`, { redirect: 'manual' })
  t.equal(exported.status, 302)
  const zeros = Buffer.from(await (await fetch(String(exported.headers.get('location')))).arrayBuffer())
  t.ok(zeros.equals(Buffer.alloc(SIZE)), 'the redirected upload wrote nothing')

  const there = await fetch(String(put.headers.get('location')), { method: 'PUT', body: bytes, redirect: 'manual' })
  t.equal(there.status, 200, 'the SR\u2019s host takes it')
  await there.arrayBuffer()
  t.match(await taskOutcome(xapi, session, task), { status: 'success' })
  const followed = Buffer.from(await (await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}`)).arrayBuffer())
  t.ok(followed.equals(bytes), 'a client that follows the redirect reads what was written')

  const shared = await scratchVdi(xapi, session)
  t.equal((await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${shared}`, { redirect: 'manual' })).status, 200, 'a shared SR\u2019s VDI is served where asked')
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const halted = Object.entries(vms).find(([, r]) => r['power_state'] === 'Halted' && r['is_a_template'] === false && (r['VBDs'] as string[]).length > 0)?.[0]
  const xva = Buffer.from(await (await fetch(`${xapi.url}/export?session_id=${session}&ref=${halted}`, { redirect: 'manual' })).arrayBuffer())
  const count = (await xapi.call<string[]>('VM.get_all', [session])).length
  const importTask = await xapi.call<string>('task.create', [session, 'import', ''])
  const importQuery = `session_id=${session}&sr_id=${local}&task_id=${importTask}`
  const sent = await fetch(`${xapi.url}/import?${importQuery}`, { method: 'PUT', body: xva, redirect: 'manual' })
  t.equal(sent.status, 302, 'an XVA for a member\u2019s local SR goes to that member')
  t.equal(sent.headers.get('location'), `http://${address}:${port}/import?${importQuery}`)
  t.equal((await xapi.call<string[]>('VM.get_all', [session])).length, count, 'the master imported nothing')
  await (await fetch(String(sent.headers.get('location')), { method: 'PUT', body: xva })).arrayBuffer()
  const imported = /OpaqueRef:[^<]+/.exec(String((await taskOutcome(xapi, session, importTask))['result']))?.[0] ?? ''
  const vbds = await xapi.call<string[]>('VM.get_VBDs', [session, imported])
  const disk = await xapi.call<string>('VBD.get_VDI', [session, vbds[0]])
  t.equal(await xapi.call('VDI.get_SR', [session, disk]), local, 'the member put its disks on its SR')

  const exportQuery = `session_id=${session}&ref=${imported}`
  const asked = await fetch(`${xapi.url}/export?${exportQuery}`, { redirect: 'manual' })
  t.equal(asked.status, 302, 'a VM whose disks are on a member\u2019s local SR is exported by that member')
  t.equal(asked.headers.get('location'), `http://${address}:${port}/export?${exportQuery}`)
  const again = Buffer.from(await (await fetch(String(asked.headers.get('location')))).arrayBuffer())
  t.ok(again.length > 0 && again.subarray(0, 7).toString() === 'ova.xml', 'that member sends the XVA')
  t.equal((await fetch(`${xapi.url}/export?session_id=${session}&ref=${halted}`, { redirect: 'manual' })).status, 200, 'a VM on shared storage is exported where asked')
})

/** A PUT whose body is sent in part, then held: answers the request (to send more or end) once the handler has answered. */
async function heldUpload(url: string, first: Buffer, length: number): Promise<{ response: IncomingMessage; closed: Promise<unknown> }> {
  const request = httpRequest(url, { method: 'PUT', headers: { 'content-length': length } })
  // events.once would reject on the reset this test causes: only the close matters.
  const closed = new Promise((resolve) => request.on('close', resolve))
  request.on('error', () => {})
  request.write(first)
  const [response] = (await once(request, 'response')) as [IncomingMessage]
  response.on('error', () => {})
  response.resume()
  return { response, closed }
}

/**
 * A GET whose first chunk is read, then nothing until `rest` is called: the
 * handler waits on the socket until something stops it. `rest` reads what
 * is left and answers how many bytes came in all (the body is ended by the
 * connection, so only its length tells it was cut short).
 */
async function heldDownload(url: string): Promise<{ rest: () => Promise<number> }> {
  const request = httpRequest(url)
  request.on('error', () => {})
  request.end()
  const [response] = (await once(request, 'response')) as [IncomingMessage]
  response.on('error', () => {})
  let received = 0
  const counted = new Promise<number>((resolve) => {
    response.on('data', (chunk: Buffer) => (received += chunk.length))
    request.on('close', () => resolve(received))
  })
  response.pause()
  return {
    rest: () => {
      response.resume()
      return counted
    },
  }
}

t.test('task.cancel of a task.create task stops its transfer: the task ends cancelled, an import leaves its target as it was', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vdi = await scratchVdi(xapi, session)
  const sr = await xapi.call<string>('VDI.get_SR', [session, vdi])
  const bytes = content()
  const seed = await xapi.call<string>('task.create', [session, 'seed', ''])
  await (await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${seed}&vdi=${vdi}&format=raw`, { method: 'PUT', body: bytes })).arrayBuffer()
  t.match(await taskOutcome(xapi, session, seed), { status: 'success' })

  const upload = await xapi.call<string>('task.create', [session, 'upload', ''])
  const held = await heldUpload(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${upload}&vdi=${vdi}&format=raw`, randomBytes(2 * MiB), SIZE)
  t.equal(held.response.statusCode, 200, 'the import has begun')
  t.equal(await xapi.call('task.cancel', [session, upload]), '')
  t.match(await taskOutcome(xapi, session, upload), { status: 'cancelled', error_info: ['TASK_CANCELLED', upload] })
  await held.closed
  const after = Buffer.from(await (await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}&format=raw`)).arrayBuffer())
  t.ok(after.equals(bytes), 'nothing of the cancelled upload was written')

  const download = await xapi.call<string>('task.create', [session, 'download', ''])
  const big = await xapi.call<string>('VDI.create', [session, { name_label: 'big', SR: sr, virtual_size: 1024 * MiB, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const reading = await heldDownload(`${xapi.url}/export_raw_vdi?session_id=${session}&task_id=${download}&vdi=${big}&format=raw`)
  await xapi.call('task.cancel', [session, download])
  t.match(await taskOutcome(xapi, session, download), { status: 'cancelled', error_info: ['TASK_CANCELLED', download] })
  t.ok((await reading.rest()) < 1024 * MiB, 'the download stopped short')

  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const halted = Object.entries(vms).find(([, r]) => r['power_state'] === 'Halted' && r['is_a_template'] === false && (r['VBDs'] as string[]).length > 0)?.[0]
  const xva = Buffer.from(await (await fetch(`${xapi.url}/export?session_id=${session}&ref=${halted}`)).arrayBuffer())
  const count = (await xapi.call<string[]>('VM.get_all', [session])).length
  const vmUpload = await xapi.call<string>('task.create', [session, 'import', ''])
  const vmHeld = await heldUpload(`${xapi.url}/import?session_id=${session}&task_id=${vmUpload}`, xva.subarray(0, xva.length >> 1), xva.length)
  await xapi.call('task.cancel', [session, vmUpload])
  t.match(await taskOutcome(xapi, session, vmUpload), { status: 'cancelled' })
  await vmHeld.closed
  t.equal((await xapi.call<string[]>('VM.get_all', [session])).length, count, 'a cancelled VM import makes no VM')

  // 64 MiB of data in the VM's XVA: more than the socket buffers hold, so the held export waits on them.
  const filled = await xapi.call<string>('VDI.create', [session, { name_label: 'filled', SR: sr, virtual_size: 64 * MiB, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const fill = await xapi.call<string>('task.create', [session, 'fill', ''])
  await (await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${fill}&vdi=${filled}&format=raw`, { method: 'PUT', body: randomBytes(64 * MiB) })).arrayBuffer()
  t.match(await taskOutcome(xapi, session, fill), { status: 'success' })
  await xapi.call('VBD.create', [session, { VM: halted, VDI: filled, userdevice: 'autodetect', bootable: false, mode: 'RW', type: 'Disk', empty: false, other_config: {}, qos_algorithm_type: '', qos_algorithm_params: {}, unpluggable: true }])
  const vmDownload = await xapi.call<string>('task.create', [session, 'export', ''])
  const vmReading = await heldDownload(`${xapi.url}/export?session_id=${session}&task_id=${vmDownload}&ref=${halted}`)
  await xapi.call('task.cancel', [session, vmDownload])
  t.match(await taskOutcome(xapi, session, vmDownload), { status: 'cancelled', error_info: ['TASK_CANCELLED', vmDownload] })
  t.ok((await vmReading.rest()) < 64 * MiB, 'the VM export stopped short')

  const idle = await xapi.call<string>('task.create', [session, 'idle', ''])
  t.same(await xapi.json('task.cancel', [session, idle]), { error: ['OPERATION_NOT_ALLOWED', `task ${idle} is not pending`] }, 'a task no transfer reports to cannot be cancelled')
})
