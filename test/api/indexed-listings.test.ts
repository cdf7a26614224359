import t from 'tap'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { compileFilter } from '../../src/filter/index.js'
import { jsonBody, startServer } from '../helpers/server.js'

type Vm = Record<string, unknown> & { id: string; name_label: string; $pool: string; href: string }

// 1,500 VMs: past the size from which listings are heavy reads and filters may be answered from an index.
const server = await startServer({ app: { labSpec: generateLabSpec({ vms: 1500, hosts: 15 }) } })
t.teardown(() => server.close())

/** Every VM in listing order, each as the filter sees it (the record, without the href the listing adds). */
async function records(): Promise<Vm[]> {
  const { body } = await server.json<Vm[]>('/rest/v0/vms?fields=*')
  return body
}

function expected(vms: readonly Vm[], filter: string, fields: readonly string[]): string {
  const matching = compileFilter(filter)
  const kept = vms.filter(({ href: _href, ...record }) => matching(record))
  return JSON.stringify(kept.map((vm) => ({ ...Object.fromEntries(fields.filter((field) => field in vm).map((field) => [field, vm[field]])), href: vm.href })))
}

t.test('listings whose filter an index can answer are byte for byte those of a scan, as are those it cannot', async (t) => {
  const vms = await records()
  const [first] = vms
  if (first === undefined) throw new Error('no VM')
  const tagged = vms.find((vm) => Array.isArray(vm['tags']) && vm['tags'].length > 0)?.['tags'] as string[] | undefined
  const filters = [
    'power_state:Running',
    'power_state:running !name_label:q1000000',
    `$pool:${first.$pool} power_state:|(Halted Paused)`,
    `tags:${JSON.stringify(tagged?.[0] ?? 'none')}`,
    `name_label:${first.name_label}`,
    'power_state:Running CPUs:number:>2',
    'CPUs:number:>2',
    '!power_state:Running',
    '|(power_state:Halted name_label:vm-0001*)',
    'name_label:/1$/ power_state:Suspended',
    'Suspended',
  ]
  const fields = ['name_label', 'power_state', '$container']
  for (const filter of filters) {
    const body = await server.request(`/rest/v0/vms?fields=${fields.join(',')}&filter=${encodeURIComponent(filter)}`)
    t.equal(body.status, 200, filter)
    t.equal(await body.text(), expected(vms, filter, fields), filter)
  }
  const ndjson = await server.request(`/rest/v0/vms?fields=name_label&ndjson=true&limit=7&filter=${encodeURIComponent('power_state:Halted')}`)
  const lines = (JSON.parse(expected(vms, 'power_state:Halted', ['name_label'])) as unknown[]).slice(0, 7).map((value) => JSON.stringify(value) + '\n')
  t.equal(await ndjson.text(), lines.join(''), 'NDJSON with a limit, from the index')
})

t.test('a change is seen by the next filtered listing', async (t) => {
  const vms = await records()
  const [vm] = vms.filter((candidate) => candidate['power_state'] === 'Running')
  if (vm === undefined) throw new Error('no running VM')
  const path = `/rest/v0/vms?fields=id&filter=${encodeURIComponent('power_state:Running name_label:renamed-by-test')}`
  t.same((await server.json(path)).body, [], 'no VM has the name yet')
  const renamed = await server.request(`/rest/v0/vms/${vm.id}`, jsonBody({ nameLabel: 'renamed-by-test' }, 'PATCH'))
  t.equal(renamed.status, 204)
  t.same((await server.json(path)).body, [{ id: vm.id, href: vm.href }], 'the renamed VM, found by its new name')
  t.same((await server.json(`/rest/v0/vms?fields=id&filter=${encodeURIComponent(`power_state:Running name_label:${vm.name_label}`)}`)).body, [], 'and not by its old one')
})

t.test('a filter that does not parse is a 400 before any listing, and changes nothing', async (t) => {
  const path = `/rest/v0/vms?fields=name_label&filter=${encodeURIComponent('power_state:Running')}`
  const before = await (await server.request(path)).text()
  const bad = await server.json('/rest/v0/vms?fields=name_label&filter=' + encodeURIComponent('power_state:('))
  t.equal(bad.status, 400)
  t.same(bad.body, {
    error: 'parse error: expected a term at position 13',
    code: 'FILTER_PARSE_ERROR',
    data: { stringToParse: 'power_state:(', position: 13 },
  })
  const tooComplex = await server.json('/rest/v0/vms?filter=' + encodeURIComponent('power_state:Running /a/ /b/'))
  t.equal(tooComplex.status, 400)
  t.match(tooComplex.body, { code: 'FILTER_TOO_COMPLEX', data: { limit: 160, actual: 257 } })
  t.equal(await (await server.request(path)).text(), before, 'the same listing after')
})
