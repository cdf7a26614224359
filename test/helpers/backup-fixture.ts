import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { createGzip } from 'node:zlib'
import { LocalRepository } from '../../src/backups/repository.js'
import { formatBackupTimestamp } from '../../src/backups/layout.js'
import { toXapiRecords, vmRecord } from '../../src/backups/xapi-records.js'
import type { XvaDescription } from '../../src/formats/xva/description.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'

/**
 * The small repository in `fixtures/backup-repository`, written by Keel's
 * own writer in the reference's layout (notes reference-backups.md §1–3):
 * one VM with a 4 MiB disk, a full archive (gzip XVA) and a delta chain of
 * two (a full VHD, then a differencing VHD of one changed block). Everything
 * is fixed (ids, times, content), so writing it again gives the same bytes.
 *
 *   node dist/test/helpers/backup-fixture.js fixtures/backup-repository
 */

export const FIXTURE = {
  vm: '1b1f6f2e-2c4d-4a53-9d7e-6a3c2e0d9a01',
  job: '5e2a0c8d-0f55-4f0b-8a35-3c1d9b7e2f10',
  schedule: '7c9d4e21-4b6a-4f3e-9e1c-2d8a5b0f6c33',
  liveVdi: '9f3b2a1c-6d4e-4c5b-8a7f-0e1d2c3b4a55',
  snapshots: ['c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e01', 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e02', 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e03'] as const,
  sr: '3a4b5c6d-7e8f-4091-a2b3-c4d5e6f70812',
  size: 4 * 1024 * 1024,
  /** the full archive, the delta chain's full, its differencing child */
  timestamps: [Date.UTC(2026, 0, 1, 0, 0, 0), Date.UTC(2026, 0, 2, 0, 0, 0), Date.UTC(2026, 0, 3, 0, 0, 0)] as const,
  /** block → content at each point: block 0 from the start, block 1 changed for the last point */
  blocks: [new Map([[0, 1]]), new Map([[0, 1]]), new Map([[0, 1], [1, 2]])] as const,
}

function description(snapshotVdi: string): XvaDescription {
  return {
    vm: {
      uuid: FIXTURE.vm,
      name_label: 'fixture VM',
      name_description: 'written by test/helpers/backup-fixture.ts',
      memory_static_max: 268435456,
      memory_dynamic_max: 268435456,
      memory_dynamic_min: 268435456,
      memory_static_min: 134217728,
      VCPUs_max: 1,
      VCPUs_at_startup: 1,
      is_a_template: false,
      tags: ['fixture'],
      other_config: {},
    },
    disks: [{ uuid: snapshotVdi, name_label: 'fixture disk', name_description: '', virtual_size: FIXTURE.size, device: 'xvda', userdevice: '0', bootable: true, mode: 'RW' }],
    vifs: [],
  }
}

/** Text, so the fixture's files compress well in git. */
export function fixtureBlock(seed: number): Buffer {
  return Buffer.alloc(BLOCK_SIZE, `KEEL backup fixture block ${seed}\n`)
}

async function* blocksOf(point: number, only?: readonly number[]): AsyncGenerator<{ index: number; data: Buffer }> {
  for (const [index, seed] of FIXTURE.blocks[point] ?? []) if (only === undefined || only.includes(index)) yield { index, data: fixtureBlock(seed) }
}

export async function writeFixtureRepository(root: string): Promise<void> {
  const repository = new LocalRepository(root, [root])
  const [fullTime, baseTime, deltaTime] = FIXTURE.timestamps
  const common = { jobId: FIXTURE.job, scheduleId: FIXTURE.schedule, version: '2.0.0', size: 0, tags: [] }

  const fullDescription = description(FIXTURE.snapshots[0])
  const allocated = [...FIXTURE.blocks[0].keys()]
  const xva = encodeXva(fullDescription, [{ size: FIXTURE.size, allocated, blocks: blocksOf(0) }], { now: new Date(fullTime) })
  await repository.writeFull(
    { ...common, mode: 'full', timestamp: fullTime, vm: vmRecord(fullDescription), vmSnapshot: vmRecord(fullDescription), xva: `./${formatBackupTimestamp(fullTime)}.xva` },
    Readable.from(xva).pipe(createGzip()),
  )

  let parent: { uuid: string; timestamp: number; name: string } | undefined
  for (const [point, timestamp] of [[1, baseTime], [2, deltaTime]] as const) {
    const snapshotVdi = FIXTURE.snapshots[point]
    const records = toXapiRecords(description(snapshotVdi), [FIXTURE.liveVdi], FIXTURE.sr, FIXTURE.vm)
    const changed = parent === undefined ? [...FIXTURE.blocks[point].keys()] : [1]
    const plan = planVhdStream({ size: FIXTURE.size, allocated: changed, uuid: snapshotVdi, ...(parent === undefined ? {} : { parent }), now: timestamp })
    await repository.writeDelta(
      { ...common, mode: 'delta', timestamp, vm: vmRecord(description(snapshotVdi)), vmSnapshot: records.vm, vdis: records.vdis, vbds: records.vbds, vifs: records.vifs, vtpms: [] },
      [{ vdiRef: Object.keys(records.vdis)[0] as string, liveVdiUuid: FIXTURE.liveVdi, vhd: encodeVhdStream(plan, blocksOf(point, changed)), differencing: parent !== undefined }],
    )
    parent = { uuid: snapshotVdi, timestamp: 0, name: `${formatBackupTimestamp(timestamp)}.vhd` }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const target = process.argv[2]
  if (target === undefined) throw new Error('usage: backup-fixture.js <empty folder>')
  await writeFixtureRepository(target)
}
