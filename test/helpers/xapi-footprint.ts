import { readdirSync } from 'node:fs'
import type { TestServer } from './server.js'
import type { RunningSimulator } from './xapi-simulator.js'

/** A VDI's content as the simulator's own `/export_raw_vdi` sends it (asked of the master, its redirect followed). */
export async function exported(xapi: RunningSimulator, vdi: string): Promise<Buffer> {
  const session = await xapi.login()
  const response = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}&format=raw`)
  if (response.status !== 200) throw new Error(`export_raw_vdi: ${response.status}`)
  return Buffer.from(await response.arrayBuffer())
}

/** What a transfer could leave behind: the pool's VMs, VDIs and Keel's tasks there (asked of the simulator), Keel's VMs and VDIs, the driver's spools. */
export async function xapiFootprint(xapi: RunningSimulator, server: TestServer, spoolDir: string): Promise<Record<string, unknown>> {
  const session = await xapi.login()
  const refs = async (cls: string): Promise<string[]> => (await xapi.call<string[]>(`${cls}.get_all`, [session])).sort()
  const ids = async (collection: string): Promise<string[]> => (await server.json<Array<{ id: string }>>(`/rest/v0/${collection}?fields=id`)).body.map(({ id }) => id).sort()
  const tasks = await xapi.call<Record<string, { name_label: string }>>('task.get_all_records', [session])
  return {
    poolVms: await refs('VM'),
    poolVdis: await refs('VDI'),
    poolTasks: Object.values(tasks).map((task) => task.name_label).filter((name) => name.startsWith('Keel')),
    vms: await ids('vms'),
    vdis: await ids('vdis'),
    spooled: readdirSync(spoolDir),
  }
}
