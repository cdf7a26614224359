import t from 'tap'
import { randomBytes } from 'node:crypto'
import { decodeXmlRpc } from '../../src/xapi/xml-rpc.js'
import { startSimulator, type RunningSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

const MiB = 1024 * 1024
type Records = Record<string, Record<string, unknown>>

async function upload(xapi: RunningSimulator, session: string, vdi: string, bytes: Buffer): Promise<void> {
  const task = await xapi.call<string>('task.create', [session, 'upload', ''])
  const put = await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&task_id=${task}&vdi=${vdi}&format=raw`, { method: 'PUT', body: bytes })
  await put.arrayBuffer()
  if ((await taskOutcome(xapi, session, task))['status'] !== 'success') throw new Error('upload failed')
}

async function download(xapi: RunningSimulator, session: string, vdi: string): Promise<Buffer> {
  const response = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}&format=raw`)
  return Buffer.from(await response.arrayBuffer())
}

t.test('VDI.snapshot: a snapshot VDI holding the content of the moment, which later writes to the disk leave alone', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const sr = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === true)?.[0]
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'data', SR: sr, virtual_size: 4 * MiB, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const before = randomBytes(4 * MiB)
  await upload(xapi, session, vdi, before)

  const snapshot = await xapi.call<string>('VDI.snapshot', [session, vdi, { 'driver-param': 'ignored' }])
  t.match(await xapi.call('VDI.get_record', [session, snapshot]), { is_a_snapshot: true, snapshot_of: vdi, SR: sr, virtual_size: 4 * MiB, name_label: 'data' })
  t.ok((await xapi.call<string[]>('VDI.get_snapshots', [session, vdi])).includes(snapshot), 'the disk lists it')
  t.ok((await xapi.call<string[]>('SR.get_VDIs', [session, sr])).includes(snapshot), 'its SR too')
  const labRecord = xapi.simulator.services.driver.getObject(await xapi.call<string>('VDI.get_uuid', [session, snapshot]))
  t.match(labRecord, { type: 'VDI-snapshot' }, 'a VDI-snapshot of the lab, seen by Keel')

  const after = randomBytes(4 * MiB)
  await upload(xapi, session, vdi, after)
  t.ok((await download(xapi, session, snapshot)).equals(before), 'the snapshot keeps the content it was taken with')
  t.ok((await download(xapi, session, vdi)).equals(after), 'the disk has its new content')

  const task = await xapi.call<string>('Async.VDI.snapshot', [session, vdi, {}])
  const done = await taskOutcome(xapi, session, task)
  t.match(done, { status: 'success' })
  const second = String(decodeXmlRpc(String(done['result'])))
  t.ok((await download(xapi, session, second)).equals(after), 'Async.VDI.snapshot: the content of its moment')
  t.ok((await xapi.call<string[]>('system.listMethods', [])).includes('Async.VDI.snapshot'))

  const count = (await xapi.call<string[]>('VDI.get_all', [session])).length
  t.same(await xapi.json('VDI.snapshot', [session, snapshot, {}]), { error: ['OPERATION_NOT_ALLOWED', `${snapshot} is a snapshot`] })
  t.same(await xapi.json('VDI.snapshot', [session, 'OpaqueRef:nope', {}]), { error: ['HANDLE_INVALID', 'VDI', 'OpaqueRef:nope'] })
  t.same(await xapi.json('VDI.snapshot', [session, vdi]), { error: ['MESSAGE_PARAMETER_COUNT_MISMATCH', 'VDI.snapshot', '3', '2'] })
  t.equal((await xapi.call<string[]>('VDI.get_all', [session])).length, count, 'the refusals made nothing')
})
