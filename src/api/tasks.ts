import { Type } from '@sinclair/typebox'
import { allows } from '../acl/check.js'
import type { JsonCache } from '../http/json-cache.js'
import { sendJsonBytes, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorBodySchema, ErrorResponses } from '../http/schemas.js'
import { TaskSchema } from '../model/task.js'
import type { TaskManager } from '../tasks/manager.js'
import type { ActionBinding } from './actions.js'
import { BASE } from './paths.js'
import { recordBytes } from './read.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

const abortSpec = {
  name: 'abort',
  privilege: 'abort',
  summary: 'Ask a pending task to stop; it ends as a failure with an abort error',
  params: Type.Object({}, { additionalProperties: false }),
}

/** Abort is itself an action, as in the reference: it runs as a (short) task of its own. */
export function taskActions(tasks: TaskManager): ActionBinding[] {
  return [
    {
      spec: abortSpec,
      run: async (object) => {
        tasks.abort(object.id)
        return undefined
      },
    },
  ]
}

const MAX_WAIT = 24 * 3600_000

export function taskRoutes(source: CollectionSource, tasks: TaskManager, cache: JsonCache): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/tasks/:id`,
      operationId: 'get-tasks',
      summary: 'One task; with wait=true, once it has left pending',
      tags: ['tasks'],
      access: { privilege: { resource: 'task', action: 'read' } },
      params: Type.Object({ id: Type.String() }),
      query: Type.Object({
        wait: Type.Optional(Type.Boolean({ description: 'Hold the request until the task is no longer pending' })),
        timeout: Type.Optional(
          Type.Integer({ minimum: 0, maximum: MAX_WAIT, description: 'With wait: answer with the current record after this many ms' }),
        ),
      }),
      responses: { 200: { description: 'The task', schema: TaskSchema }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const id = params.id
        let task = resolveTarget(source, id, principal, 'read')
        if (query.wait === true) {
          // A client that hangs up stops the wait instead of leaving a waiter behind.
          const gone = new AbortController()
          res.once('close', () => gone.abort())
          task = await tasks.wait(id, query.timeout, gone.signal)
          if (res.destroyed) return
        }
        sendJsonBytes(res, 200, recordBytes(cache, task))
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/tasks`,
      operationId: 'delete-finished-tasks',
      summary: 'Delete every finished task you may delete; pending ones stay',
      tags: ['tasks'],
      access: { privilege: { resource: 'task', action: 'delete' } },
      responses: { 204: { description: 'Deleted' }, ...ErrorResponses },
      handler: ({ res, principal }) => {
        const finished = [...tasks.list()].filter((task) => task.status !== 'pending' && allows(principal, 'task', 'delete', task))
        for (const task of finished) tasks.delete(task.id)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/tasks/:id`,
      operationId: 'delete-tasks',
      summary: 'Delete a finished task',
      tags: ['tasks'],
      access: { privilege: { resource: 'task', action: 'delete' } },
      params: Type.Object({ id: Type.String() }),
      responses: { 204: { description: 'Deleted' }, ...ErrorResponses, 409: { description: 'The task is still pending', schema: ErrorBodySchema } },
      handler: ({ res, params, principal }) => {
        resolveTarget(source, params.id, principal, 'delete')
        tasks.delete(params.id)
        sendNoContent(res)
      },
    }),
  ]
}
