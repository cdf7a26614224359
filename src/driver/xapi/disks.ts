import { noSuchObject } from '../../errors.js'
import type { DiskBlock } from '../../formats/blocks.js'
import type { DiskAccess, DiskWriteSession, ImportSession, XoRecord } from '../types.js'
import type { XapiIndex } from './operations.js'
import type { XapiLocator } from './types.js'

/** Placeholder until the disk streams land (issue 28): every disk is unknown to it. */
export class XapiDisks implements DiskAccess {
  constructor(
    readonly locator: XapiLocator,
    readonly index: XapiIndex,
  ) {}

  allocation(vdi: XoRecord): Promise<number[]> {
    return Promise.reject(noSuchObject(vdi.id, vdi.type))
  }

  changedBlocks(vdi: XoRecord): Promise<number[]> {
    return Promise.reject(noSuchObject(vdi.id, vdi.type))
  }

  // A generator fails on its first read, as a real export fails once its stream starts.
  async *readBlocks(vdi: XoRecord): AsyncIterable<DiskBlock> {
    yield* []
    throw noSuchObject(vdi.id, vdi.type)
  }

  openWrite(vdi: XoRecord): Promise<DiskWriteSession> {
    return Promise.reject(noSuchObject(vdi.id, vdi.type))
  }

  importVdi(sr: XoRecord): Promise<ImportSession> {
    return Promise.reject(noSuchObject(sr.id, sr.type))
  }

  importVm(sr: XoRecord): Promise<ImportSession> {
    return Promise.reject(noSuchObject(sr.id, sr.type))
  }
}
