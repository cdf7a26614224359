import { randomUUID } from 'node:crypto'
import { invalidParameters, noSuchObject } from '../../errors.js'
import type { DiskBlock } from '../../formats/blocks.js'
import type { XvaDescription } from '../../formats/xva/description.js'
import { diskSize } from '../disk-size.js'
import type { Created, DiskAccess, DiskRead, DiskReadOptions, DiskWriteOptions, DiskWriteSession, ImportSession, NewVdi, XoRecord } from '../types.js'
import type { DiskRef, HeldWriteSession, LabDisks } from './disks.js'
import { addVdi } from './operations/builders.js'
import { createVm, type CreateVmParams } from './operations/create-vm.js'
import { Plan } from './operations/plan.js'
import type { LabStore } from './store.js'

/** The template an imported VM takes its other settings from, when the pool has it. */
const IMPORT_TEMPLATE = 'Other install media'

function diskRef(vdi: XoRecord): DiskRef {
  if (typeof vdi.$SR !== 'string') throw new Error(`${vdi.type} ${vdi.id} has no SR`)
  return { id: vdi.id, sr: vdi.$SR }
}

function requireUserSr(sr: XoRecord): void {
  if (sr.type !== 'SR') throw noSuchObject(sr.id, 'SR')
  if (sr.content_type === 'iso') throw invalidParameters([{ path: 'sr', message: `SR ${sr.id} is an ISO library` }])
}

/**
 * Staged content for several new disks: each written to its own session,
 * all renamed into place first, then `create` commits the records in one
 * batch. Until the records exist the SR stays busy, so nothing takes the new
 * files for garbage; any failure removes them all.
 */
function stagedImport(sessions: readonly HeldWriteSession[], create: () => Created): ImportSession {
  let ended = false
  const abort = async (): Promise<void> => {
    if (ended) return
    ended = true
    await Promise.allSettled(sessions.map((session) => session.abort()))
  }
  return {
    async write(disk, block) {
      const session = sessions[disk]
      if (session === undefined) throw new RangeError(`no disk ${disk} in this import`)
      await session.write(block)
    },
    async commit() {
      if (ended) throw new Error('import already ended')
      try {
        for (const session of sessions) await session.finish()
        const created = create()
        ended = true
        for (const session of sessions) session.release()
        return created
      } catch (error) {
        await abort()
        throw error
      }
    },
    abort,
  }
}

/** The lab's disk content as the driver boundary offers it: records in, files underneath. */
export class LabDiskAccess implements DiskAccess {
  readonly #files: LabDisks
  readonly #store: LabStore
  readonly #clock: () => number

  constructor(files: LabDisks, store: LabStore, clock: () => number) {
    this.#files = files
    this.#store = store
    this.#clock = clock
  }

  allocation(vdi: XoRecord): Promise<number[]> {
    return this.#files.allocation(diskRef(vdi), diskSize(vdi))
  }

  async openRead(vdi: XoRecord): Promise<DiskRead> {
    const allocated = await this.allocation(vdi)
    return { allocated, blocks: (indexes, options) => this.readBlocks(vdi, indexes, options), close: async () => undefined }
  }

  changedBlocks(vdi: XoRecord, base: XoRecord): Promise<number[]> {
    return this.#files.changedBlocks(diskRef(vdi), diskRef(base), diskSize(vdi))
  }

  readBlocks(vdi: XoRecord, indexes: readonly number[], options?: DiskReadOptions): AsyncIterable<DiskBlock> {
    return this.#files.readBlocks(diskRef(vdi), indexes, options)
  }

  openWrite(vdi: XoRecord, options?: DiskWriteOptions): Promise<DiskWriteSession> {
    return this.#files.openWrite(diskRef(vdi), diskSize(vdi), options)
  }

  async importVdi(sr: XoRecord, vdi: NewVdi, _userId: string): Promise<ImportSession> {
    requireUserSr(sr)
    const id = randomUUID()
    const session = await this.#files.openWrite({ id, sr: sr.id }, vdi.size)
    return stagedImport([session], () => {
      const plan = new Plan(this.#store)
      addVdi(plan, { sr: sr.id, poolId: String(sr.$pool), ...vdi, id })
      plan.commit()
      return { id, type: 'VDI' }
    })
  }

  async importVm(sr: XoRecord, description: XvaDescription, userId: string): Promise<ImportSession> {
    requireUserSr(sr)
    const poolId = String(sr.$pool)
    const params = this.#vmParams(poolId, sr.id, description)
    const ids = description.disks.map(() => randomUUID())
    // Checked before any byte is staged: a VM the pool could not take is refused at once.
    createVm(new Plan(this.#store), poolId, params, userId, this.#clock(), ids)
    const sessions: HeldWriteSession[] = []
    try {
      for (const [i, disk] of description.disks.entries()) sessions.push(await this.#files.openWrite({ id: ids[i] as string, sr: sr.id }, disk.virtual_size))
    } catch (error) {
      await Promise.allSettled(sessions.map((session) => session.abort()))
      throw error
    }
    return stagedImport(sessions, () => {
      const plan = new Plan(this.#store)
      const id = createVm(plan, poolId, params, userId, this.#clock(), ids)
      const vm = plan.edit(id, 'VM')
      vm.tags = [...description.vm.tags]
      plan.commit()
      return { id, type: 'VM' }
    })
  }

  /** What create_vm needs to make the VM an XVA describes: disks in order on `srId`, VIFs on the networks of the same names. */
  #vmParams(poolId: string, srId: string, { vm, disks, vifs }: XvaDescription): CreateVmParams {
    const templates = [...this.#store.objectsOfType('VM-template')].filter((template) => template.$pool === poolId)
    const template = templates.find((candidate) => candidate.name_label === IMPORT_TEMPLATE) ?? templates[0]
    if (template === undefined) throw invalidParameters([{ path: 'sr', message: `pool ${poolId} has no template to build the VM from` }])
    const networks = [...this.#store.objectsOfType('network')].filter((network) => network.$pool === poolId)
    const memory = Math.max(16 * 1024 * 1024, vm.memory_static_max)
    return {
      template: template.id,
      name_label: vm.name_label,
      name_description: vm.name_description,
      cpus: Math.min(256, Math.max(1, vm.VCPUs_max)),
      memory,
      vdis: disks.map((disk) => ({ name_label: disk.name_label, name_description: disk.name_description, size: disk.virtual_size, sr: srId })),
      vifs: vifs.flatMap((vif) => {
        const network = networks.find((candidate) => candidate.name_label === vif.network_name_label)
        return network === undefined ? [] : [{ network: network.id, ...(vif.MAC === '' ? {} : { mac: vif.MAC }) }]
      }),
    }
  }
}
