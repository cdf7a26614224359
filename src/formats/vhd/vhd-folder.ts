import { open, readdir, rename, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { coalesce } from './coalesce.js'
import { fileHandleAccess } from './random-access.js'
import { VhdFile } from './vhd-file.js'

/** VHD files side by side in a folder, children naming their parents' files. */

export interface OpenedVhd {
  readonly name: string
  readonly handle: FileHandle
  readonly vhd: VhdFile
}

export async function openVhdFile(folder: string, name: string, flags: 'r' | 'r+' = 'r'): Promise<OpenedVhd | undefined> {
  let handle: FileHandle
  try {
    handle = await open(join(folder, name), flags)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    return { name, handle, vhd: await VhdFile.open(fileHandleAccess(handle)) }
  } catch (error) {
    await handle.close()
    throw error
  }
}

export async function closeAll(files: readonly OpenedVhd[]): Promise<void> {
  await Promise.all(files.map((file) => file.handle.close()))
}

/** Makes renames and unlinks in a folder durable. */
export async function syncFolder(folder: string): Promise<void> {
  const directory = await open(folder, 'r')
  try {
    await directory.sync()
  } finally {
    await directory.close()
  }
}

export async function listFolder(folder: string): Promise<string[]> {
  try {
    return await readdir(folder)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
}

/**
 * Merges a base into its only child: the child's blocks go into the base,
 * which takes the child's identity and then its name. Safe to run again after
 * a crash at any point: block copies are idempotent, and a base that already
 * carries the child's UUID only needs its rename.
 */
export async function mergeIntoChild(folder: string, base: string, child: string): Promise<void> {
  const parent = await openVhdFile(folder, base, 'r+')
  const kid = await openVhdFile(folder, child)
  if (parent === undefined || kid === undefined) {
    await closeAll([parent, kid].filter((file) => file !== undefined))
    return
  }
  try {
    if (parent.vhd.uuid !== kid.vhd.uuid) await coalesce(kid.vhd, parent.vhd)
    await parent.handle.sync()
  } finally {
    await closeAll([parent, kid])
  }
  await rename(join(folder, base), join(folder, child))
  await syncFolder(folder)
}
