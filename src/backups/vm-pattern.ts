/**
 * The reference's value-matcher (packages/value-matcher), which backup jobs
 * use to name their VMs, evaluated at each run so that new matching VMs are
 * included:
 * - `{__or: [p…]}` some pattern matches, `{__and: [p…]}` all do, `{__not: p}` p does not;
 * - another object matches a value having every listed key matching;
 * - an array pattern matches an array value of which some item matches each of its items;
 * - anything else matches an equal value.
 */
export type Pattern = unknown

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

export function matches(pattern: Pattern, value: unknown): boolean {
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value)) return false
    return pattern.every((item) => value.some((candidate) => matches(item, candidate)))
  }
  if (isObject(pattern)) {
    if ('__or' in pattern) return Array.isArray(pattern['__or']) && pattern['__or'].some((item) => matches(item, value))
    if ('__and' in pattern) return Array.isArray(pattern['__and']) && pattern['__and'].every((item) => matches(item, value))
    if ('__not' in pattern) return !matches(pattern['__not'], value)
    if (!isObject(value)) return false
    return Object.entries(pattern).every(([key, item]) => matches(item, value[key]))
  }
  return pattern === value
}

/** The VMs a job's pattern selects, as the reference evaluates it: records of type VM only, `xo:no-bak` tags excluded. */
export function selectVms<T extends { readonly type: string; readonly tags?: unknown }>(pattern: Pattern, vms: Iterable<T>): T[] {
  const selected: T[] = []
  for (const vm of vms) {
    if (vm.type !== 'VM') continue
    const tags = Array.isArray(vm.tags) ? vm.tags : []
    if (tags.some((tag) => typeof tag === 'string' && (tag === 'xo:no-bak' || tag.startsWith('xo:no-bak=')))) continue
    if (matches(pattern, vm)) selected.push(vm)
  }
  return selected
}
