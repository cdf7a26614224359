import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Asset } from './assets.js'

type Encoding = 'br' | 'gzip' | 'identity'

/** An asset, or a file whose format is compressed already (fonts, images): only its identity is sent. */
export type ServedFile = Omit<Asset, 'gzip' | 'br'> & { readonly gzip?: Buffer; readonly br?: Buffer }

/**
 * The best of brotli, gzip and none that Accept-Encoding allows: the highest q wins, brotli
 * first on a tie; `*` stands for whatever is not named; `q=0` refuses.
 */
export function chooseEncoding(header: string | undefined): Encoding {
  if (header === undefined) return 'identity'
  const weights = new Map<string, number>()
  for (const part of header.split(',')) {
    const [name = '', ...parameters] = part.trim().toLowerCase().split(';')
    const q = parameters.map((parameter) => /^\s*q=([\d.]+)\s*$/.exec(parameter)?.[1]).find((value) => value !== undefined)
    weights.set(name.trim(), q === undefined ? 1 : Number(q))
  }
  const star = weights.get('*')
  const weight = (name: Encoding): number => weights.get(name) ?? (name === 'identity' ? (star ?? 0.001) : (star ?? 0))
  let best: Encoding = 'identity'
  for (const candidate of ['gzip', 'br'] as const) if (weight(candidate) > 0 && weight(candidate) >= weight(best)) best = candidate
  return best
}

/** Whether If-None-Match names this representation's tag (weak comparison, as RFC 9110 has it for GET). */
export function notModified(req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match']
  if (header === undefined) return false
  if (header.trim() === '*') return true
  const opaque = etag.replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque)
}

/** The encoding the request takes and its bytes. */
function representation(req: IncomingMessage, asset: ServedFile): readonly [Encoding, Buffer] {
  const { gzip, br } = asset
  if (gzip === undefined || br === undefined) return ['identity', asset.identity]
  const encoding = chooseEncoding(req.headers['accept-encoding'])
  return [encoding, encoding === 'br' ? br : encoding === 'gzip' ? gzip : asset.identity]
}

/** A file's representation: its encoding's bytes and tag, 304 when the client holds it already. */
export function sendAsset(req: IncomingMessage, res: ServerResponse, asset: ServedFile, headers: Readonly<Record<string, string>>): void {
  const [encoding, body] = representation(req, asset)
  // Each encoding is a representation of its own: its strong tag differs.
  const etag = encoding === 'identity' ? asset.etag : `${asset.etag.slice(0, -1)}-${encoding}"`
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  if (asset.gzip !== undefined) res.setHeader('Vary', 'Accept-Encoding')
  res.setHeader('ETag', etag)
  if (notModified(req, etag)) {
    res.statusCode = 304
    res.end()
    return
  }
  res.statusCode = 200
  res.setHeader('Content-Type', asset.type)
  if (encoding !== 'identity') res.setHeader('Content-Encoding', encoding)
  res.setHeader('Content-Length', body.length)
  res.end(body)
}
