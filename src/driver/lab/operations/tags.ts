import type { TaggableType } from '../../../model/operations.js'
import type { XoRecord } from '../../types.js'
import type { Plan } from './plan.js'

/** Adds or removes one tag; asking for what is already so changes nothing (and emits nothing). */
export function setTag(plan: Plan, object: XoRecord, type: TaggableType, tag: string, present: boolean): void {
  const { tags } = plan.get(object.id, type)
  if (tags.includes(tag) === present) return
  plan.edit(object.id, type).tags = present ? [...tags, tag] : tags.filter((candidate) => candidate !== tag)
}
