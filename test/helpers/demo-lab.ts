import type { TestServer } from './server.js'

/** The demo lab's objects the API tests act on, named as fixtures/demo-lab.json names them. */
const named = {
  pool: ['pools', 'Demo pool'],
  master: ['hosts', 'xcp-ng-01'],
  host2: ['hosts', 'xcp-ng-02'],
  host3: ['hosts', 'xcp-ng-03'],
  runningVm: ['vms', 'web-01'],
  snapshottedVm: ['vms', 'db-01'],
  haltedVm: ['vms', 'staging-app'],
  localHaltedVm: ['vms', 'dev-sandbox'],
  pausedVm: ['vms', 'ci-runner-01'],
  suspendedVm: ['vms', 'win11-desktop'],
  defaultSr: ['srs', 'NFS shared storage'],
  template: ['vm-templates', 'Debian Bookworm 12'],
} as const

export type DemoIds = { readonly [K in keyof typeof named]: string }

/** Looks the demo objects up through the API by collection and name, so tests do not pin generated ids. */
export async function demoIds(server: TestServer): Promise<DemoIds> {
  const ids: Record<string, string> = {}
  for (const [key, [collection, name]] of Object.entries(named)) {
    const { status, body } = await server.json<Array<{ id: string; name_label: string }>>(`/rest/v0/${collection}?fields=id,name_label`)
    const found = status === 200 ? body.filter((object) => object.name_label === name) : []
    if (found.length !== 1) throw new Error(`the demo lab has ${found.length} ${collection} named ${name}`)
    ids[key] = (found[0] as { id: string }).id
  }
  return ids as DemoIds
}
