import { Type } from '@sinclair/typebox'
import { sendJson } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BASE } from './paths.js'

/** The reference's service routes, public as there: a liveness answer, where the web interfaces live, whether the MCP bridge may be used. */
export function serviceRoutes(deps: { readonly clock: () => number }): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/ping`,
      operationId: 'ping',
      summary: 'Answers pong with the server\'s time (ms), without credentials',
      tags: ['service'],
      access: { public: true },
      responses: { 200: { description: 'Pong', schema: Type.Object({ result: Type.Literal('pong'), timestamp: Type.Integer() }) } },
      handler: ({ res }) => sendJson(res, 200, { result: 'pong', timestamp: deps.clock() }),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/gui-routes`,
      operationId: 'get-gui-routes',
      summary: 'Where the web interfaces are served: Keel\'s console (`xo5`, the interface XO 6 sends non-administrators to) and XO 6',
      tags: ['service'],
      access: { public: true },
      responses: { 200: { description: 'The interfaces\' paths', schema: Type.Object({ xo5: Type.Optional(Type.String()), xo6: Type.Optional(Type.String()) }) } },
      handler: ({ res }) => sendJson(res, 200, { xo5: '/', xo6: '/v6' }),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/mcp/status`,
      operationId: 'get-mcp-status',
      summary: 'Whether an MCP client may use this server (Keel\'s bridge reads the public REST API, so it always may)',
      tags: ['service'],
      access: { public: true },
      responses: { 200: { description: 'Enabled', schema: Type.Object({ enabled: Type.Literal(true) }) } },
      handler: ({ res }) => sendJson(res, 200, { enabled: true }),
    }),
  ]
}
