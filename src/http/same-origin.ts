import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { parseCookie } from 'cookie'
import { KeelError } from '../errors.js'

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** The cookies the authenticator reads a token from (src/auth/authenticate.ts). */
function carriesCookieToken(cookie: string | undefined): boolean {
  if (cookie === undefined) return false
  const cookies = parseCookie(cookie)
  return cookies['authenticationToken'] !== undefined || cookies['token'] !== undefined
}

/**
 * The origin in `Origin` is this service as the client reached it: its host and
 * port as the Host header names them. Behind a proxy ending TLS the connection
 * is plain while the page is https, so only a TLS connection pins the scheme.
 */
function isOwnOrigin(origin: string, req: IncomingMessage): boolean {
  const host = req.headers.host
  if (host === undefined) return false
  const tls = (req.socket as Partial<TLSSocket>).encrypted === true
  try {
    const url = new URL(origin)
    const schemeFits = tls ? url.protocol === 'https:' : url.protocol === 'http:' || url.protocol === 'https:'
    // Both parsed with the origin's scheme, so that a default port written out or left out compares equal.
    return schemeFits && url.origin === origin.toLowerCase() && url.host === new URL(`${url.protocol}//${host}`).host
  } catch {
    return false
  }
}

function crossSite(reason: string, data: Record<string, unknown>): KeelError {
  return new KeelError('CROSS_SITE_REQUEST', `cross-site request refused: ${reason}`, data)
}

/**
 * Refuses a cross-site request forgery: a browser sends the `authenticationToken`
 * cookie with a form posted from any site, so a request it authenticates may
 * change something only when it comes from this service's own pages.
 *
 * The browser tells where a request comes from in `Sec-Fetch-Site` (every
 * current browser) or `Origin` (sent with every cross-origin unsafe request, a
 * form post included). A request with neither comes from no browser (curl, the
 * reference's own scripts, Keel's CLI): no page could have made it, and it is
 * let through, as Go's CrossOriginProtection does. Bearer and Basic credentials
 * are never sent by a browser on its own, so they are not checked.
 */
export function refuseCrossSite(req: IncomingMessage, method: string): void {
  if (UNSAFE.has(method)) refuseCrossSiteCookie(req)
}

/**
 * The same check whatever the method: a WebSocket upgrade is a GET, yet a
 * page of any site may open one and the browser sends the cookie with it
 * (cross-site WebSocket hijacking), so a cookie-authenticated upgrade must
 * come from this service's own pages.
 */
export function refuseCrossSiteCookie(req: IncomingMessage): void {
  if (!carriesCookieToken(req.headers.cookie)) return
  const site = req.headers['sec-fetch-site']
  if (site !== undefined) {
    // `none`: the user's own navigation (a bookmark, the address bar), which no page chose.
    if (site === 'same-origin' || site === 'none') return
    throw crossSite(`Sec-Fetch-Site is ${site}`, { secFetchSite: site })
  }
  const origin = req.headers.origin
  if (origin === undefined) return
  if (!isOwnOrigin(origin, req)) throw crossSite(`Origin ${origin} is not this service`, { origin })
}
