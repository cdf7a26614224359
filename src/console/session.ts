import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { parse as parseContentType } from 'content-type'
import { parseCookie, stringifySetCookie } from 'cookie'
import type { Authenticator } from '../auth/authenticate.js'
import type { Principal } from '../auth/principal.js'
import type { TokenStore } from '../auth/tokens.js'
import { invalidParameters, KeelError } from '../errors.js'
import { bodyTooLarge, readJsonBody } from '../http/body.js'
import { requestBody } from '../http/continue.js'
import { toErrorResponse } from '../http/error-response.js'
import { sendJson } from '../http/reply.js'

export const COOKIE = 'authenticationToken'
/** An email, a password and a path fit in far less; a sign-in is read whole before anything else. */
const MAX_FORM_BYTES = 16 * 1024

interface SignInInput {
  readonly email: string
  readonly password: string
  readonly redirect: string
  /** a browser form, answered by redirects; otherwise JSON, answered by a status */
  readonly form: boolean
}

/**
 * Only a path of this origin: `//host` and `/\host` are other origins to a browser, and
 * anything with a scheme is too. Everything else becomes the console's root.
 */
export function sameOriginPath(value: string | undefined | null): string {
  if (value === undefined || value === null || !value.startsWith('/')) return '/'
  if (value.startsWith('//') || value.startsWith('/\\') || /[\u0000-\u001f\\]/.test(value)) return '/'
  return value
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of requestBody(req)) {
    size += chunk.length
    if (size > MAX_FORM_BYTES) throw bodyTooLarge(MAX_FORM_BYTES)
    chunks.push(chunk)
  }
  return new URLSearchParams(Buffer.concat(chunks, size).toString('utf8'))
}

const field = (value: unknown, path: string): string => {
  if (typeof value !== 'string' || value === '') throw invalidParameters([{ path, message: 'is required' }])
  return value
}

async function readSignIn(req: IncomingMessage): Promise<SignInInput> {
  const header = req.headers['content-type']
  const type = header === undefined ? undefined : parseContentType(header, { parameters: false }).type
  if (type === 'application/x-www-form-urlencoded') {
    const form = await readForm(req)
    return { email: field(form.get('email'), 'body.email'), password: field(form.get('password'), 'body.password'), redirect: sameOriginPath(form.get('redirect')), form: true }
  }
  const body = await readJsonBody(req, MAX_FORM_BYTES)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    if (body === undefined) throw invalidParameters([{ path: 'body', message: 'is required' }])
    throw invalidParameters([{ path: 'body', message: 'must be an object' }])
  }
  const record = body as Record<string, unknown>
  return {
    email: field(record['email'], 'body.email'),
    password: field(record['password'], 'body.password'),
    redirect: sameOriginPath(typeof record['redirect'] === 'string' ? record['redirect'] : undefined),
    form: false,
  }
}

/** Behind TLS, here or at a proxy that says so, the cookie is never sent in the clear. */
function overTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true || req.headers['x-forwarded-proto'] === 'https'
}

function seeOther(res: ServerResponse, location: string, cookie?: string): void {
  res.statusCode = 303
  if (cookie !== undefined) res.setHeader('Set-Cookie', cookie)
  res.setHeader('Location', location)
  res.setHeader('Content-Length', 0)
  res.end()
}

/** A failed sign-in by script: the error as every route words it, but no Basic challenge for the browser to prompt with. */
function sendUnchallenged(res: ServerResponse, error: unknown, requestId: string): void {
  const { status, body } = toErrorResponse(error, requestId)
  sendJson(res, status, body)
}

export interface SessionDeps {
  readonly authenticator: Authenticator
  readonly tokens: TokenStore
  readonly validity: number
}

/** `POST /signin`: a new token in an HttpOnly cookie, for a form (303) or a script (200 with the user). */
export async function signIn(deps: SessionDeps, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
  const input = await readSignIn(req)
  let principal: Principal
  try {
    principal = await deps.authenticator.signIn(input.email, input.password)
  } catch (error) {
    if (!(error instanceof KeelError && error.code === 'INVALID_CREDENTIALS')) throw error
    if (input.form) return seeOther(res, `/signin?failed=1&redirect=${encodeURIComponent(input.redirect)}`)
    return sendUnchallenged(res, error, requestId)
  }
  const token = deps.tokens.create({ userId: principal.id, validity: deps.validity, description: 'web console' })
  const cookie = stringifySetCookie({
    name: COOKIE,
    value: token.id,
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: overTls(req),
    maxAge: Math.floor(deps.validity / 1000),
  })
  if (input.form) return seeOther(res, input.redirect, cookie)
  res.setHeader('Set-Cookie', cookie)
  sendJson(res, 200, { id: principal.id, email: principal.email, permission: principal.permission, redirect: input.redirect })
}

/** `POST /signout`: the cookie's token is revoked (whoever sends it has it) and the cookie cleared. */
export function signOut(deps: SessionDeps, req: IncomingMessage, res: ServerResponse): void {
  const secret = req.headers.cookie === undefined ? undefined : parseCookie(req.headers.cookie)[COOKIE]
  if (secret !== undefined) deps.tokens.revokeSecret(secret)
  const cleared = stringifySetCookie({ name: COOKIE, value: '', httpOnly: true, sameSite: 'lax', path: '/', secure: overTls(req), maxAge: 0 })
  seeOther(res, '/signin', cleared)
}

/** Whether the request carries a valid session cookie: a page chooses between the console and the sign-in form. */
export function hasSession(authenticator: Authenticator, req: IncomingMessage): boolean {
  if (req.headers.cookie === undefined) return false
  try {
    // A token alone is checked synchronously; only a password would make this a promise.
    const who = authenticator.authenticate({ cookie: req.headers.cookie, authorization: undefined })
    return who !== undefined && !(who instanceof Promise)
  } catch {
    return false
  }
}
