// The worst filters the limits accept, each evaluated over 10,000 generated VMs in process.
import type { XoRecord } from '../src/driver/types.js'
import { compileFilter, filterCost, parseFilter } from '../src/filter/index.js'

const or = (terms: string[]): string => `|(${terms.join(' ')})`
const times = (count: number, term: (i: number) => string): string[] => Array.from({ length: count }, (_, i) => term(i))

/** Each at the cost limit, matching nothing, so every term is evaluated on every object. */
export const worstFilters: Readonly<Record<string, string>> = {
  'a pattern on the whole object, 8 on a property': or(['/zq(x|y)+$/', ...times(8, (i) => `name_label:/q${i}z/`)]),
  '10 plain terms on the whole object': or(times(10, (i) => `zq${i}`)),
  '40 patterns on a property': or(times(40, (i) => `name_label:/q${i}z/`)),
  '120 plain terms on a property': or(times(120, (i) => `power_state:q${i}`)),
  'a glob on the whole object, 32 plain terms on a property': or(['zq*x*y', ...times(32, (i) => `power_state:q${i}`)]),
}

/** A pattern a backtracking engine takes about 2^40 steps over on this name (test/api/hostile-filters.test.ts). */
const BACKTRACKING = { name: 'name_label:/(a+)+$/, every name 40 a then !', source: 'name_label:/(a+)+$/', nameLabel: 'a'.repeat(40) + '!' }

function row(name: string, source: string, records: readonly XoRecord[]): string {
  const predicate = compileFilter(source)
  const started = performance.now()
  for (const record of records) predicate(record)
  return `| ${name} | ${filterCost(parseFilter(source))} | ${source.length} | ${(performance.now() - started).toFixed(0)} |`
}

/** Markdown rows: filter, its cost, its length, ms for one pass over the records. */
export function filterBench(records: readonly XoRecord[]): string {
  const hostile = records.map((record) => ({ ...record, name_label: BACKTRACKING.nameLabel }))
  const rows = [...Object.entries(worstFilters).map(([name, source]) => row(name, source, records)), row(BACKTRACKING.name, BACKTRACKING.source, hostile)]
  return `| worst accepted filter over ${records.length} VMs | cost | length | ms |\n|---|---|---|---|\n${rows.join('\n')}\n`
}
