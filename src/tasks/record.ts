import { randomBytes } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import { KeelError } from '../errors.js'
import type { TaskSchema, TaskStatusSchema } from '../model/task.js'

export type TaskStatus = Static<typeof TaskStatusSchema>
export type TaskRecord = Readonly<Static<typeof TaskSchema>>
export type TaskProperties = Readonly<TaskRecord['properties']>

let sequence = 0

/**
 * Time-sortable ids, as the reference has used since 2026: base-36 ms padded
 * to 9 characters, then a per-process sequence so that ids made in the same
 * millisecond still sort in creation order, then a random tail.
 */
export function taskId(now: number): string {
  sequence = (sequence + 1) % 36 ** 4
  return (
    now.toString(36).padStart(9, '0') +
    '-' +
    sequence.toString(36).padStart(4, '0') +
    randomBytes(5).readUIntBE(0, 5).toString(36).padStart(8, '0')
  )
}

/** The error as a task result: message, name, code and data, never a stack. */
export function serializeError(error: unknown): Record<string, unknown> {
  if (error instanceof KeelError) {
    return { message: error.message, name: error.name, code: error.code, ...(error.data === undefined ? {} : { data: error.data }) }
  }
  return { message: 'internal error', name: 'Error', code: 'INTERNAL_ERROR' }
}
