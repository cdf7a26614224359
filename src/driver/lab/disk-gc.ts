import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { listFolder, mergeIntoChild, openVhdFile, syncFolder } from '../../formats/vhd/vhd-folder.js'
import { isBaseName, parentName, recordIdOf } from './disk-files.js'

/** One disk file of an SR folder as the collector and the usage figures see it. */
export interface FolderFile {
  readonly name: string
  readonly uuid: string
  /** the parent's file name, for a differencing child */
  readonly parent: string | undefined
  /** bytes the file occupies */
  readonly size: number
}

/** Every disk file of a folder (temporary files left out). */
export async function surveyFolder(folder: string): Promise<Map<string, FolderFile>> {
  const files = new Map<string, FolderFile>()
  for (const name of await listFolder(folder)) {
    if (!name.endsWith('.vhd')) continue
    const opened = await openVhdFile(folder, name)
    if (opened === undefined) continue
    files.set(name, { name, uuid: opened.vhd.uuid, parent: parentName(opened.vhd), size: opened.vhd.fileSize })
    await opened.handle.close()
  }
  return files
}

function childrenOf(files: ReadonlyMap<string, FolderFile>): Map<string, string[]> {
  const children = new Map<string, string[]>()
  for (const file of files.values()) {
    if (file.parent === undefined) continue
    const list = children.get(file.parent) ?? []
    list.push(file.name)
    children.set(file.parent, list)
  }
  return children
}

/**
 * Brings an SR folder back to its tidy shape: leftovers of interrupted writes
 * and files of disks that no longer exist go, bases nothing depends on go,
 * and a base with a single child is merged into it (so chains only grow with
 * live snapshots and clones). Only called when nothing reads or writes the
 * folder. Returns whether anything changed.
 */
export async function collectGarbage(folder: string, exists: (id: string) => boolean): Promise<boolean> {
  let changed = false
  for (const name of await listFolder(folder)) {
    if (!name.endsWith('.tmp')) continue
    await rm(join(folder, name), { force: true })
    changed = true
  }
  for (;;) {
    const files = await surveyFolder(folder)
    const children = childrenOf(files)
    const orphan = [...files.keys()].find((name) => {
      const id = recordIdOf(name)
      return (id !== undefined && !exists(id)) || (isBaseName(name) && (children.get(name)?.length ?? 0) === 0)
    })
    if (orphan !== undefined) {
      await rm(join(folder, orphan), { force: true })
      changed = true
      continue
    }
    const single = [...children].find(([name, kids]) => isBaseName(name) && files.has(name) && kids.length === 1)
    if (single === undefined) break
    try {
      await mergeIntoChild(folder, single[0], single[1][0] as string)
    } catch (error) {
      // A child larger than its base's block table (a grown disk) stays a child: its chain still reads right.
      if (error instanceof RangeError) break
      throw error
    }
    changed = true
  }
  if (changed) await syncFolder(folder)
  return changed
}
