import { randomBytes } from 'node:crypto'
import type { XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'

export type TaskStatus = 'pending' | 'success' | 'failure' | 'interrupted'

export interface TaskProperties {
  readonly name: string
  readonly objectId?: string
  readonly objectType?: string
  readonly userId?: string
  readonly type?: string
  readonly params?: unknown
  readonly progress?: number
}

export interface TaskRecord extends XoRecord {
  readonly type: 'task'
  readonly properties: TaskProperties
  readonly start: number
  readonly updatedAt: number
  readonly end?: number
  readonly status: TaskStatus
  readonly result?: unknown
  readonly abortionRequestedAt?: number
}

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
