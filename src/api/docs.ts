import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import type { ServerResponse } from 'node:http'
import { Type } from '@sinclair/typebox'
import { noSuchObject } from '../errors.js'
import { redirect, sendJsonText } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BASE } from './paths.js'

const contentTypes: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.html': 'text/html; charset=utf-8',
  '.map': 'application/json',
}

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Keel REST API reference</title>
<link rel="stylesheet" href="${BASE}/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${BASE}/docs/assets/swagger-ui-bundle.js"></script>
<script src="${BASE}/docs/init.js"></script>
</body>
</html>
`

// Same-origin requests carry the session cookie, so "Try it out" acts as the logged-in user.
const init = `window.ui = SwaggerUIBundle({
  url: '${BASE}/docs/swagger.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  withCredentials: true,
  persistAuthorization: true,
})
`

/** The interactive reference, served from the locally installed swagger-ui-dist: no network at run time. */
export function docsRoutes(openApiText: () => string): RouteDef[] {
  const assetsDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  // Only files that exist at start-up can be served: a request never builds a path.
  const assets = new Map<string, string>()
  for (const name of readdirSync(assetsDir)) {
    if (contentTypes[extname(name)] !== undefined) assets.set(name, join(assetsDir, name))
  }
  const loaded = new Map<string, Buffer>()
  const text = (type: string, body: string) => ({ type, body: Buffer.from(body) })
  const fixed = {
    page: text('text/html; charset=utf-8', page),
    init: text('text/javascript; charset=utf-8', init),
  }
  const sendFixed = (res: ServerResponse, item: { type: string; body: Buffer }): void => {
    res.setHeader('Content-Type', item.type)
    res.setHeader('Content-Length', item.body.length)
    res.end(item.body)
  }
  const common = { tags: ['docs'], access: { public: true } } as const
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: BASE,
      operationId: 'root-redirect',
      summary: 'Redirects to the API reference',
      hidden: true,
      responses: { 302: { description: 'To /rest/v0/docs' } },
      handler: ({ res }) => redirect(res, 302, `${BASE}/docs`),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${BASE}/docs`,
      operationId: 'docs',
      summary: 'Interactive API reference',
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: ({ res }) => sendFixed(res, fixed.page),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${BASE}/docs/init.js`,
      operationId: 'docs-init',
      summary: 'Reference page start-up script',
      hidden: true,
      responses: { 200: { description: 'script' } },
      handler: ({ res }) => sendFixed(res, fixed.init),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${BASE}/docs/swagger.json`,
      operationId: 'openapi',
      summary: 'The OpenAPI document',
      responses: { 200: { description: 'OpenAPI 3.1 document', schema: Type.Object({}, { additionalProperties: true }) } },
      handler: ({ res }) => sendJsonText(res, 200, openApiText()),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${BASE}/docs/assets/:file`,
      operationId: 'docs-asset',
      summary: 'Reference page assets',
      hidden: true,
      params: Type.Object({ file: Type.String() }),
      responses: { 200: { description: 'asset' } },
      handler: ({ res, params }) => {
        const name = params.file
        const file = assets.get(name)
        if (file === undefined) throw noSuchObject(name, 'asset')
        // Read once: the bundle is over a megabyte and never changes while we run.
        let body = loaded.get(name)
        if (body === undefined) {
          body = readFileSync(file)
          loaded.set(name, body)
        }
        res.setHeader('Content-Type', contentTypes[extname(name)] as string)
        res.setHeader('Content-Length', body.length)
        res.setHeader('Cache-Control', 'public, max-age=86400')
        res.end(body)
      },
    }),
  ]
}
