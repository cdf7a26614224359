/**
 * `fields=a,b.c` as the reference does it (lodash.pick): names split on `,`
 * without trimming, dotted paths pick nested values, unknown names left out.
 */
export type FieldPath = readonly string[]

export function parseFields(fields: string): FieldPath[] {
  return fields === '' ? [] : fields.split(',').map((field) => field.split('.'))
}

export function pick(record: Readonly<Record<string, unknown>>, paths: readonly FieldPath[]): Record<string, unknown> {
  const result: Record<string, unknown> = {}
  for (const path of paths) {
    let value: unknown = record
    for (const key of path) {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) {
        value = undefined
        break
      }
      value = (value as Record<string, unknown>)[key]
    }
    if (value === undefined) continue
    let target = result
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i] as string
      const next = target[key]
      if (next === null || typeof next !== 'object') target[key] = {}
      target = target[key] as Record<string, unknown>
    }
    target[path[path.length - 1] as string] = value
  }
  return result
}
