import { taggableTypes } from '../../../model/operations.js'
import type { XoRecord } from '../../types.js'
import type { Plan } from './plan.js'

const TAGGED = ['VM', 'VM-snapshot', 'VM-template', 'VM-controller', 'host', 'pool', 'SR', 'VDI', 'VDI-snapshot', 'network'] as const

/** Adds or removes one tag; asking for what is already so changes nothing (and emits nothing). */
export function setTag(plan: Plan, object: XoRecord, tag: string, present: boolean): void {
  const type = TAGGED.find((candidate) => candidate === object.type && taggableTypes.includes(candidate))
  if (type === undefined) throw new Error(`the lab cannot tag a ${object.type}`)
  const { tags } = plan.get(object.id, type)
  if (tags.includes(tag) === present) return
  plan.edit(object.id, type).tags = present ? [...tags, tag] : tags.filter((candidate) => candidate !== tag)
}
