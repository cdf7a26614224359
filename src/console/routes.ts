import type { IncomingMessage, ServerResponse } from 'node:http'
import { Type } from '@sinclair/typebox'
import type { Authenticator } from '../auth/authenticate.js'
import type { TokenStore } from '../auth/tokens.js'
import { noSuchObject } from '../errors.js'
import { redirect } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses } from '../http/schemas.js'
import { loadAssets, type AssetTable } from './assets.js'
import { appPage, ASSET_BASE, assetHeaders, signInPage, signOutPage, type Page } from './page.js'
import { hasSession, sameOriginPath, signIn, signOut } from './session.js'
import { notModified, sendAsset } from './static-reply.js'

export interface ConsoleDeps {
  readonly authenticator: Authenticator
  readonly tokens: TokenStore
  /** the configured `defaultTokenValidity`: how long a sign-in lasts */
  readonly validity: number
  /** the assets to serve (tests give their own); the console folder and the libraries by default */
  readonly assets?: AssetTable
}

/** Pages change with the session and with an upgrade: revalidated on every visit, never stored by a proxy. */
function sendPage(req: IncomingMessage, res: ServerResponse, page: Page): void {
  for (const [name, value] of Object.entries(page.headers)) res.setHeader(name, value)
  res.setHeader('Cache-Control', 'no-cache, private')
  res.setHeader('Vary', 'Cookie')
  res.setHeader('ETag', page.etag)
  if (notModified(req, page.etag)) {
    res.statusCode = 304
    res.end()
    return
  }
  res.statusCode = 200
  res.setHeader('Content-Type', 'text/html; charset=utf-8')
  res.setHeader('Content-Length', page.html.length)
  res.end(page.html)
}

const IMMUTABLE = 'public, max-age=31536000, immutable'

/** The web console: its page, its files, and signing in and out with a cookie. */
export function consoleRoutes(deps: ConsoleDeps): RouteDef[] {
  const table = deps.assets ?? loadAssets()
  const app = appPage(table)
  const signOutForm = signOutPage(table)
  const signInPages = new Map<string, Page>()
  const signInFor = (target: string, failed: boolean): Page => {
    const key = `${failed ? 1 : 0}${target}`
    const known = signInPages.get(key)
    if (known !== undefined) return known
    const made = signInPage(table, { redirect: target, failed })
    // Targets come from requests: only the plain one is kept.
    if (target === '/') signInPages.set(key, made)
    return made
  }
  const session = { authenticator: deps.authenticator, tokens: deps.tokens, validity: deps.validity }
  const common = { tags: ['console'], access: { public: true } } as const
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/',
      operationId: 'console',
      summary: 'The web console (the sign-in page without a session)',
      responses: { 200: { description: 'HTML page', contentType: 'text/html' }, 302: { description: 'To /signin without a session' } },
      handler: ({ req, res }) => (hasSession(deps.authenticator, req) ? sendPage(req, res, app) : redirect(res, 302, '/signin')),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/signin',
      operationId: 'signin-page',
      summary: 'The sign-in page',
      query: Type.Object({ redirect: Type.Optional(Type.String()), failed: Type.Optional(Type.String()) }),
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: ({ req, res, query }) => sendPage(req, res, signInFor(sameOriginPath(query.redirect), query.failed !== undefined)),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/signin',
      operationId: 'signin',
      summary: 'Sign in with email and password: sets the authenticationToken cookie',
      responses: {
        200: { description: 'Signed in (JSON body): the user, and the cookie set' },
        303: { description: 'Signed in, or not (form body): to `redirect`, or back to the form' },
        ...BodyErrorResponses,
      },
      handler: ({ req, res, requestId }) => signIn(session, req, res, requestId),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/signout',
      operationId: 'signout-page',
      summary: 'The sign-out page: a form that signs out when sent',
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: ({ req, res }) => sendPage(req, res, signOutForm),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/signout',
      operationId: 'signout',
      summary: "Sign out: revokes the cookie's token and clears the cookie",
      responses: { 303: { description: 'To the sign-in page' } },
      handler: ({ req, res }) => signOut(session, req, res),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${ASSET_BASE}/:version/:file`,
      operationId: 'console-asset',
      summary: 'The console files, by version',
      hidden: true,
      params: Type.Object({ version: Type.String(), file: Type.String() }),
      responses: { 200: { description: 'asset' } },
      handler: ({ req, res, params }) => {
        const asset = table.byName.get(params.file)
        // An older page's files are gone with its version: it is reloaded, never mixed with newer ones.
        if (asset === undefined || params.version !== table.version) throw noSuchObject(`${params.version}/${params.file}`, 'console file')
        sendAsset(req, res, asset, { ...assetHeaders, 'Cache-Control': IMMUTABLE })
      },
    }),
  ]
}
