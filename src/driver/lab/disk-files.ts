import { KeelError } from '../../errors.js'
import { VhdChain } from '../../formats/vhd/chain.js'
import { closeAll, openVhdFile, type OpenedVhd } from '../../formats/vhd/vhd-folder.js'
import type { VhdFile } from '../../formats/vhd/vhd-file.js'
import { isUuid, UUID_PATTERN } from '../../uuid.js'

/**
 * How the lab lays out disk files in an SR folder:
 * - `<id>.vhd`: the content of the VDI or VDI snapshot `<id>`, dynamic or a
 *   differencing child of a base;
 * - `base-<uuid>.vhd`: a read-only base shared by the disks forked from it
 *   (snapshots, fast clones), never written again, coalesced away when fewer
 *   than two files still depend on it;
 * - `*.tmp`: content being written, renamed over its final name on commit.
 * Parents are named in each child's header; only names of these shapes are
 * ever followed, so no path leaves the folder.
 */

const DISK_NAME = new RegExp(`^(base-)?(${UUID_PATTERN})\\.vhd$`)

/** Only a validated UUID ever becomes part of a path. */
export function pathPart(id: unknown): string {
  if (!isUuid(id)) throw new KeelError('INVALID_PARAMETERS', `${String(id)} is not a disk identifier`, { errors: [{ path: 'id', message: 'must be a UUID' }] })
  return id
}

export const diskFileName = (id: string): string => `${pathPart(id)}.vhd`
export const baseFileName = (uuid: string): string => `base-${pathPart(uuid)}.vhd`

/** The record id a file name holds content for, or undefined for a base or a foreign file. */
export function recordIdOf(name: string): string | undefined {
  const match = DISK_NAME.exec(name)
  return match === null || match[1] !== undefined ? undefined : match[2]
}

export const isBaseName = (name: string): boolean => DISK_NAME.exec(name)?.[1] !== undefined

/** A child's parent file name, if it has the shape of one of the lab's own files. */
export function parentName(vhd: VhdFile): string | undefined {
  if (!vhd.isDifferencing) return undefined
  const name = vhd.header.parentUnicodeName
  return DISK_NAME.test(name) ? name : undefined
}

export interface OpenedChain {
  readonly chain: VhdChain
  /** child first */
  readonly files: readonly OpenedVhd[]
  close(): Promise<void>
}

/** Opens a disk file and its ancestors; undefined when the disk has no file (it reads as zeros). */
export async function openChain(folder: string, name: string): Promise<OpenedChain | undefined> {
  const leaf = await openVhdFile(folder, name)
  if (leaf === undefined) return undefined
  const files = [leaf]
  try {
    for (let file = leaf; file.vhd.isDifferencing; ) {
      const parent = parentName(file.vhd)
      const opened = parent === undefined ? undefined : await openVhdFile(folder, parent)
      if (opened === undefined) throw new Error(`disk file ${file.name} in ${folder} lost its parent ${file.vhd.header.parentUnicodeName}`)
      files.push(opened)
      file = opened
    }
    const chain = new VhdChain(files.map((file) => file.vhd))
    return { chain, files, close: () => closeAll(files) }
  } catch (error) {
    await closeAll(files)
    throw error
  }
}
