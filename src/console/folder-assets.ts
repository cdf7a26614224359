import { createHash } from 'node:crypto'
import { readFile, realpath, stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { LRUCache } from 'lru-cache'
import { isWithin } from '../backups/confine.js'
import type { ServedFile } from './static-reply.js'

const brotli = promisify(brotliCompress)
const gzipped = promisify(gzip)

/** By extension: whether the format gains from compression (fonts and images are compressed already). */
const formats: Readonly<Record<string, { readonly type: string; readonly compress: boolean }>> = {
  '.html': { type: 'text/html; charset=utf-8', compress: true },
  '.js': { type: 'text/javascript; charset=utf-8', compress: true },
  '.mjs': { type: 'text/javascript; charset=utf-8', compress: true },
  '.css': { type: 'text/css; charset=utf-8', compress: true },
  '.json': { type: 'application/json', compress: true },
  '.map': { type: 'application/json', compress: true },
  '.webmanifest': { type: 'application/manifest+json', compress: true },
  '.svg': { type: 'image/svg+xml', compress: true },
  '.txt': { type: 'text/plain; charset=utf-8', compress: true },
  '.ttf': { type: 'font/ttf', compress: true },
  '.woff': { type: 'font/woff', compress: false },
  '.woff2': { type: 'font/woff2', compress: false },
  '.png': { type: 'image/png', compress: false },
  '.jpg': { type: 'image/jpeg', compress: false },
  '.webp': { type: 'image/webp', compress: false },
  '.ico': { type: 'image/vnd.microsoft.icon', compress: false },
  '.wasm': { type: 'application/wasm', compress: false },
}
const OTHER = { type: 'application/octet-stream', compress: false } as const

/**
 * A segment that names a file below the folder, decoded already: no `.` or `..`, nothing hidden
 * (a `.git` or an editor's swap file is not part of a build), no separator or NUL of any platform.
 */
const plainSegment = (segment: string): boolean => segment !== '' && !segment.startsWith('.') && !/[/\\\0]/.test(segment)

/** Brotli 9 is within 10 % of 11 for a tenth of the time; each file is compressed once, off the event loop. */
async function makeFile(name: string, identity: Buffer): Promise<ServedFile> {
  const format = formats[extname(name).toLowerCase()] ?? OTHER
  const etag = `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`
  if (!format.compress) return { name, type: format.type, identity, etag }
  const [gz, br] = await Promise.all([
    gzipped(identity, { level: 9 }),
    brotli(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }),
  ])
  return { name, type: format.type, identity, gzip: gz, br, etag }
}

export interface FolderAssets {
  /**
   * The file at these decoded path segments below the folder, undefined when there is none: a
   * segment that could leave it, a link that resolves outside it, a folder, a missing file.
   */
  find(segments: readonly string[]): Promise<ServedFile | undefined>
}

/**
 * Files served from a folder an administrator names, read when first asked for and kept while
 * unchanged (a file rebuilt in place is read again). Both the folder and the file are resolved
 * through their links on every request: a link may not lead out, even one made after the start.
 */
export function folderAssets(root: string, options: { maxBytes: number }): FolderAssets {
  const cache = new LRUCache<string, { readonly bytes: number; readonly asset: Promise<ServedFile> }>({
    maxSize: options.maxBytes,
    sizeCalculation: (entry) => Math.max(1, entry.bytes),
  })
  return {
    async find(segments) {
      if (!segments.every(plainSegment)) return undefined
      let realRoot: string
      let real: string
      try {
        realRoot = await realpath(root)
        real = await realpath(join(root, ...segments))
      } catch {
        return undefined
      }
      if (!isWithin(realRoot, real)) return undefined
      const info = await stat(real).catch(() => undefined)
      if (info === undefined || !info.isFile()) return undefined
      const key = `${real}\0${info.size}\0${info.mtimeMs}\0${info.ino}`
      let entry = cache.get(key)
      if (entry === undefined) {
        // Its compressed forms are smaller than the file: twice its size bounds the entry.
        entry = { bytes: 2 * info.size, asset: readFile(real).then((bytes) => makeFile(real, bytes)) }
        cache.set(key, entry)
        // A file that vanished between stat and read is looked up again next time.
        entry.asset.catch(() => cache.delete(key))
      }
      return entry.asset.catch(() => undefined)
    },
  }
}
