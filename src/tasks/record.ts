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

/**
 * Time-sortable ids, as the reference has used since 2026: base-36 ms padded
 * to 9 characters, then a random suffix; string order is creation order.
 */
export function taskId(now: number): string {
  return now.toString(36).padStart(9, '0') + '-' + randomBytes(8).readBigUInt64BE().toString(36)
}

/** The error as a task result: message, name, code and data, never a stack. */
export function serializeError(error: unknown): Record<string, unknown> {
  if (error instanceof KeelError) {
    return { message: error.message, name: error.name, code: error.code, ...(error.data === undefined ? {} : { data: error.data }) }
  }
  return { message: 'internal error', name: 'Error', code: 'INTERNAL_ERROR' }
}
