import type { ServerResponse } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { gzipSync, createGzip } from 'node:zlib'
import { Type } from '@sinclair/typebox'
import tar from 'tar-stream'
import type { Driver, XoRecord } from '../driver/types.js'
import type { HostFacts, MissingPatch } from '../driver/types.js'
import { KeelError } from '../errors.js'
import { sendJson } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorBodySchema, ErrorResponses } from '../http/schemas.js'
import { BASE } from './paths.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

export interface HostExtrasDeps {
  readonly facts: HostFacts
  readonly driver: Pick<Driver, 'objectsOfType'>
  readonly hosts: CollectionSource
  readonly pools: CollectionSource
  readonly clock: () => number
}

const PatchSchema = Type.Object(
  {
    name: Type.String(),
    version: Type.String(),
    release: Type.String(),
    description: Type.String(),
    url: Type.String(),
    license: Type.String(),
    size: Type.Integer(),
    changelog: Type.Object({ date: Type.Integer(), description: Type.String(), author: Type.String() }),
  },
  { $id: 'MissingPatch' },
)

const id = Type.Object({ id: Type.String() })
const notRunning = { 409: { description: 'The host is not running', schema: ErrorBodySchema } }

function requireRunning(host: XoRecord): void {
  if (host['power_state'] !== 'Running') {
    throw new KeelError('INCORRECT_STATE', `host ${host.id} is not running`, { actual: host['power_state'], expected: 'Running' })
  }
}

/** The pool's hosts' missing updates, each once. */
async function poolPatches(deps: HostExtrasDeps, pool: XoRecord): Promise<MissingPatch[]> {
  const byName = new Map<string, MissingPatch>()
  for (const host of deps.driver.objectsOfType('host')) {
    if (host['$pool'] !== pool.id || host['power_state'] !== 'Running') continue
    for (const patch of await deps.facts.missingPatches(host)) byName.set(`${patch.name}-${patch.version}-${patch.release}`, patch)
  }
  return [...byName.values()]
}

const acceptsGzip = (accept: string | undefined): boolean => accept !== undefined && /\bgzip\b/.test(accept)

async function sendLogs(res: ServerResponse, facts: HostFacts, host: XoRecord): Promise<void> {
  const files = await facts.logFiles(host)
  const pack = tar.pack()
  for (const file of files) pack.entry({ name: file.name, mtime: new Date(file.mtime * 1000), mode: 0o644 }, file.text)
  pack.finalize()
  res.writeHead(200, { 'Content-Type': 'application/gzip', 'Content-Disposition': `attachment; filename="${host.id}-logs.tgz"` })
  await pipeline(pack, createGzip(), res)
}

export function hostExtraRoutes(deps: HostExtrasDeps): RouteDef[] {
  const { facts } = deps
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/hosts/:id/missing_patches`,
      operationId: 'get-host-missing-patches',
      summary: 'The updates a running host lacks',
      tags: ['hosts'],
      access: { privilege: { resource: 'host', action: 'read' } },
      params: id,
      responses: { 200: { description: 'The missing updates', schema: Type.Array(PatchSchema) }, ...ErrorResponses, ...notRunning },
      handler: async ({ res, params, principal }) => {
        const host = resolveTarget(deps.hosts, params.id, principal, 'read')
        requireRunning(host)
        sendJson(res, 200, await facts.missingPatches(host))
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/pools/:id/missing_patches`,
      operationId: 'get-pool-missing-patches',
      summary: 'The updates the running hosts of a pool lack, each once',
      tags: ['pools'],
      access: { privilege: { resource: 'pool', action: 'read' } },
      params: id,
      responses: { 200: { description: 'The missing updates', schema: Type.Array(PatchSchema) }, ...ErrorResponses },
      handler: async ({ res, params, principal }) => {
        sendJson(res, 200, await poolPatches(deps, resolveTarget(deps.pools, params.id, principal, 'read')))
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/hosts/:id/smt`,
      operationId: 'get-host-smt',
      summary: 'Whether the host runs simultaneous multi-threading (two threads per core)',
      tags: ['hosts'],
      access: { privilege: { resource: 'host', action: 'read' } },
      params: id,
      responses: { 200: { description: 'SMT state', schema: Type.Object({ enabled: Type.Boolean() }) }, ...ErrorResponses },
      handler: async ({ res, params, principal }) => {
        sendJson(res, 200, { enabled: await facts.smtEnabled(resolveTarget(deps.hosts, params.id, principal, 'read')) })
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/hosts/:id/audit.txt`,
      operationId: 'get-host-audit-log',
      summary: 'A running host\'s audit log, gzip-encoded when the client accepts it',
      tags: ['hosts'],
      access: { privilege: { resource: 'host', action: 'export:logs' } },
      params: id,
      responses: { 200: { description: 'The audit log', contentType: 'application/octet-stream' }, ...ErrorResponses, ...notRunning },
      handler: async ({ req, res, params, principal }) => {
        const host = resolveTarget(deps.hosts, params.id, principal, 'export:logs')
        requireRunning(host)
        const text = Buffer.from(await facts.auditLog(host))
        const date = new Date(deps.clock()).toISOString()
        const gzip = acceptsGzip(req.headers['accept-encoding'])
        const body = gzip ? gzipSync(text) : text
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Disposition': `attachment; filename="${String(host['name_label']).replace(/["\\\r\n]/g, '_')}-${date}-audit.txt"`,
          'Content-Length': body.length,
          Vary: 'Accept-Encoding',
          ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
        })
        res.end(body)
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/hosts/:id/logs.tgz`,
      operationId: 'get-host-logs',
      summary: 'A running host\'s log files, as a gzipped tar archive',
      tags: ['hosts'],
      access: { privilege: { resource: 'host', action: 'export:logs' } },
      params: id,
      responses: { 200: { description: 'The archive', contentType: 'application/gzip' }, ...ErrorResponses, ...notRunning },
      handler: async ({ res, params, principal }) => {
        const host = resolveTarget(deps.hosts, params.id, principal, 'export:logs')
        requireRunning(host)
        await sendLogs(res, facts, host)
      },
    }),
  ]
}
