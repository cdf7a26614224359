import type { XoRecord } from '../../types.js'
import type { LabType, Plan } from './plan.js'

/** The types whose tags the lab sets. */
export const TAGGED = [
  'VM',
  'VM-snapshot',
  'VM-template',
  'VM-controller',
  'host',
  'pool',
  'SR',
  'VDI',
  'VDI-snapshot',
  'network',
] as const satisfies readonly LabType[]

export type TaggedType = (typeof TAGGED)[number]

/** Adds or removes one tag; asking for what is already so changes nothing (and emits nothing). */
export function setTag(plan: Plan, object: XoRecord, type: TaggedType, tag: string, present: boolean): void {
  const { tags } = plan.get(object.id, type)
  if (tags.includes(tag) === present) return
  plan.edit(object.id, type).tags = present ? [...tags, tag] : tags.filter((candidate) => candidate !== tag)
}
