import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { packageRoot } from '../paths.js'

/** One file the console serves, held in memory with its compressed forms, made once at start. */
export interface Asset {
  readonly name: string
  readonly type: string
  readonly identity: Buffer
  readonly gzip: Buffer
  readonly br: Buffer
  /** strong: the SHA-256 of the bytes, the same for every encoding's representation but for its suffix */
  readonly etag: string
}

export interface AssetTable {
  /** a hash of every asset's bytes: the path segment that makes a URL immutable */
  readonly version: string
  readonly byName: ReadonlyMap<string, Asset>
}

const types: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

export const consoleDir = join(packageRoot, 'console')

/**
 * The libraries, by exact file: the served name and the package file behind it. Nothing under
 * node_modules is reachable but these; uPlot's minified IIFE is 22 KB gzipped against 42 KB for its
 * unminified ES module, and the charts load it only when a chart is drawn.
 */
const vendorFiles: ReadonlyArray<readonly [string, string, string]> = [
  ['preact.mjs', 'preact', 'dist/preact.mjs'],
  ['hooks.mjs', 'preact', 'hooks/dist/hooks.mjs'],
  ['htm.mjs', 'htm', 'dist/htm.mjs'],
  ['uplot.js', 'uplot', 'dist/uPlot.iife.min.js'],
  ['uplot.css', 'uplot', 'dist/uPlot.min.css'],
]

/** A package's folder, from its entry point: htm's `exports` do not list its package.json. */
function packageDir(name: string): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name))
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${name}'s entry point`)
    dir = parent
  }
  return dir
}

function makeAsset(name: string, identity: Buffer): Asset {
  const type = types[extname(name)]
  if (type === undefined) throw new Error(`console asset ${name}: no content type`)
  return {
    name,
    type,
    identity,
    gzip: gzipSync(identity, { level: 9 }),
    br: brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }),
    etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`,
  }
}

/** Reads and compresses the console's own folder and the fixed library files; only these can be served. */
export function loadAssets(dir = consoleDir): AssetTable {
  const byName = new Map<string, Asset>()
  for (const name of readdirSync(dir).sort()) {
    if (types[extname(name)] !== undefined) byName.set(name, makeAsset(name, readFileSync(join(dir, name))))
  }
  for (const [name, pkg, file] of vendorFiles) {
    if (byName.has(name)) throw new Error(`console asset ${name} is both the console's and a library's`)
    byName.set(name, makeAsset(name, readFileSync(join(packageDir(pkg), file))))
  }
  const version = createHash('sha256')
  for (const asset of byName.values()) version.update(asset.name).update('\0').update(asset.etag)
  return { version: version.digest('base64url').slice(0, 12), byName }
}
