import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blockPool } from '../../src/formats/block-pool.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { run, VPC_OPTS } from '../helpers/disks.js'
import { startSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

const BLOCKS = 12
const SIZE = BLOCKS * BLOCK_SIZE

/** Every other block random, the rest never written: the raw export sends both kinds. */
function content(): Buffer {
  const bytes = Buffer.alloc(SIZE)
  for (let index = 0; index < BLOCKS; index += 2) randomBytes(BLOCK_SIZE).copy(bytes, index * BLOCK_SIZE)
  return bytes
}

/** Takes every idle block out of the process's pool, so what it holds afterwards came back from the export alone. */
function emptyPool(): void {
  while (blockPool.idle > 0) blockPool.take()
}

t.test('/export_raw_vdi gives each block it read back to the pool once the socket has it, raw and VHD, the bytes unchanged', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const srs = await xapi.call<Record<string, Record<string, unknown>>>('SR.get_all_records', [session])
  const sr = Object.entries(srs).find(([, r]) => r['shared'] === true && r['content_type'] === 'user')?.[0]
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'lent blocks', SR: sr, virtual_size: SIZE }])
  const bytes = content()
  await (await fetch(`${xapi.url}/import_raw_vdi?session_id=${session}&vdi=${vdi}&format=raw`, { method: 'PUT', body: bytes })).arrayBuffer()
  const dir = mkdtempSync(join(tmpdir(), 'keel-xapi-lent-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))

  for (const format of ['raw', 'vhd'] as const) {
    emptyPool()
    const task = await xapi.call<string>('task.create', [session, `${format} export`, ''])
    const response = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&task_id=${task}&vdi=${vdi}&format=${format}`)
    t.equal(response.status, 200)
    const body = Buffer.from(await response.arrayBuffer())
    t.match(await taskOutcome(xapi, session, task), { status: 'success' })
    // The pool keeps idle blocks up to its bound; dropped after the socket, none would be back.
    t.ok(blockPool.idle > 0, `${format}: blocks back in the pool (${blockPool.idle})`)
    t.ok(blockPool.idle <= BLOCKS / 2, `${format}: no more than the export read`)
    if (format === 'raw') {
      t.ok(body.equals(bytes), 'the raw export is what was imported')
      continue
    }
    writeFileSync(join(dir, 'disk.vhd'), body)
    t.equal(run('qemu-img', ['convert', '--image-opts', VPC_OPTS(join(dir, 'disk.vhd')), '-O', 'raw', join(dir, 'disk.raw')]).status, 0)
    t.ok(readFileSync(join(dir, 'disk.raw')).equals(bytes), 'qemu-img reads the VHD export back as the same bytes')
  }
})
