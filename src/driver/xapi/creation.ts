/**
 * Who created a VM through Keel, and when: XAPI has no such field, so Keel
 * keeps it in the VM's other_config under this key, as JSON, and the mapping
 * reads it back as the record's `creation` (src/model/vm.ts).
 */
export const CREATION_KEY = 'keel:creation'

export interface Creation {
  readonly date: string
  readonly template?: string
  readonly user: string
  readonly creator: string
}

export const encodeCreation = (creation: Creation): string => JSON.stringify(creation)

const isText = (value: unknown): value is string => typeof value === 'string' && value !== ''

/** The creation an other_config entry holds; anything malformed (a hand edit, another tool) reads as none. */
export function decodeCreation(entry: string | undefined): Creation | undefined {
  if (entry === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(entry)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { date, template, user, creator } = value as Record<string, unknown>
  if (!isText(date) || Number.isNaN(Date.parse(date)) || !isText(user) || !isText(creator) || !(template === undefined || isText(template))) return undefined
  return { date, ...(template === undefined ? {} : { template }), user, creator }
}
