import { Type, type Static } from '@sinclair/typebox'
import type { ServerEntry, ServerError } from './store.js'

export const ServerStatusSchema = Type.Union([Type.Literal('connected'), Type.Literal('connecting'), Type.Literal('disconnected')])
export type ServerStatus = Static<typeof ServerStatusSchema>

const ServerErrorSchema = Type.Object(
  {
    name: Type.String(),
    message: Type.String(),
    code: Type.Optional(Type.String({ description: 'XAPI error code (SESSION_AUTHENTICATION_FAILED, ...), network error code, or Keel code' })),
    params: Type.Optional(Type.Array(Type.String(), { description: 'the XAPI error parameters' })),
  },
  { additionalProperties: false },
)

export const ServerSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('server'),
    host: Type.String({ description: '`host[:port]` or URL of the pool master' }),
    label: Type.Optional(Type.String({ description: 'the label given, else the pool name' })),
    username: Type.String(),
    allowUnauthorized: Type.Boolean({ description: 'accept any certificate (the pin is still checked once recorded)' }),
    readOnly: Type.Boolean({ description: 'the connection refuses every call that would change the pool' }),
    enabled: Type.Boolean({ description: 'connected at start and after failures' }),
    status: ServerStatusSchema,
    error: Type.Optional(ServerErrorSchema),
    poolId: Type.Optional(Type.String({ description: 'while connected' })),
    master: Type.Optional(Type.String({ description: "while connected: the master host's id" })),
    poolNameLabel: Type.Optional(Type.String()),
    fingerprint: Type.Optional(Type.String({ description: 'SHA-256 of the certificate pinned at the first connection' })),
  },
  { $id: 'Server', additionalProperties: false },
)

export type ServerRecord = Static<typeof ServerSchema>

export interface LiveState {
  readonly status: ServerStatus
  readonly poolId?: string
  readonly master?: string
}

/** The entry as the API serves it: never its password. */
export function serverRecord(entry: ServerEntry, live: LiveState): ServerRecord {
  const label = entry.label ?? entry.poolNameLabel
  return {
    id: entry.id,
    type: 'server',
    host: entry.host,
    ...(label === undefined ? {} : { label }),
    username: entry.username,
    allowUnauthorized: entry.allowUnauthorized,
    readOnly: entry.readOnly,
    enabled: entry.enabled,
    status: live.status,
    ...(entry.error === undefined ? {} : { error: errorRecord(entry.error) }),
    ...(live.poolId === undefined ? {} : { poolId: live.poolId }),
    ...(live.master === undefined ? {} : { master: live.master }),
    ...(entry.poolNameLabel === undefined ? {} : { poolNameLabel: entry.poolNameLabel }),
    ...(entry.fingerprint === undefined ? {} : { fingerprint: entry.fingerprint }),
  }
}

function errorRecord(error: ServerError): NonNullable<ServerRecord['error']> {
  return {
    name: error.name,
    message: error.message,
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.params === undefined ? {} : { params: [...error.params] }),
  }
}
