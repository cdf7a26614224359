import { existsSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import { Type } from '@sinclair/typebox'
import type { Authenticator } from '../auth/authenticate.js'
import { ConfigError } from '../config/config.js'
import { noSuchObject } from '../errors.js'
import { redirect } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { folderAssets } from './folder-assets.js'
import { hasSession, sameOriginPath } from './session.js'
import { sendAsset } from './static-reply.js'

export const XO6_BASE = '/v6'

/**
 * Keel's own policy with what XO 6 needs besides, found by running it under Keel's (docs/xo6.md):
 * - `style-src 'unsafe-inline'`: its components insert `<style>` elements and set `style`
 *   attributes, which the browser refused. Scripts stay `'self'` only, so injected markup still
 *   cannot run anything.
 * - `font-src 'self'`: its fonts are files of the build, which `default-src 'none'` refuses.
 * - `manifest-src 'self'`: the page links its web manifest, refused the same way.
 */
const policy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

export const xo6Headers = {
  'Content-Security-Policy': policy,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
} as const

/** Vite writes its outputs under `assets/` with a hash of their content in the name: `index-B6s5GVDV.js`. */
const HASHED = /^assets\/[^/]+-[\w-]{8}\.\w+$/
/** Behind a cookie: a shared cache must not hand them to whoever asks. */
const IMMUTABLE = 'private, max-age=31536000, immutable'
const REVALIDATED = 'no-cache, private'
/** The build is about 7 MB; this holds it twice over with its compressed forms. */
const MAX_CACHED_BYTES = 64 * 1024 * 1024

export interface Xo6Deps {
  readonly authenticator: Authenticator
  /** the `dist` folder of a build of @xen-orchestra/web */
  readonly root: string
}

/**
 * The reference's web application, served from a build an administrator names, at `/v6/`:
 * its files to a signed-in browser only, anyone else to the sign-in page and back.
 */
export function xo6Routes(deps: Xo6Deps): RouteDef[] {
  if (!existsSync(join(deps.root, 'index.html'))) {
    throw new ConfigError('http.xo6Root', `${deps.root} holds no index.html: expected the dist folder of a build of @xen-orchestra/web`)
  }
  const files = folderAssets(deps.root, { maxBytes: MAX_CACHED_BYTES })
  const serve = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    if (!hasSession(deps.authenticator, req)) {
      return redirect(res, 302, `/signin?redirect=${encodeURIComponent(sameOriginPath(req.url))}`)
    }
    const segments = path === '' ? ['index.html'] : path.split('/')
    const asset = await files.find(segments)
    if (asset === undefined) throw noSuchObject(path, 'XO 6 file')
    sendAsset(req, res, asset, { ...xo6Headers, 'Cache-Control': HASHED.test(segments.join('/')) ? IMMUTABLE : REVALIDATED })
  }
  const common = { tags: ['console'], access: { public: true }, hidden: true } as const
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: XO6_BASE,
      operationId: 'xo6',
      summary: "The reference's web application (XO 6)",
      responses: { 200: { description: 'HTML page', contentType: 'text/html' }, 302: { description: 'To /v6/, or to /signin without a session' } },
      // Its files are named relative to the page: the page's URL ends with a slash.
      handler: ({ req, res }) => (new URL(req.url ?? '/', 'http://keel').pathname === XO6_BASE ? redirect(res, 302, `${XO6_BASE}/`) : serve(req, res, '')),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${XO6_BASE}/*`,
      operationId: 'xo6-file',
      summary: "The reference's web application's files",
      params: Type.Object({ '*': Type.String() }),
      responses: { 200: { description: 'file' }, 302: { description: 'To /signin without a session' } },
      handler: ({ req, res, params }) => serve(req, res, params['*']),
    }),
  ]
}
