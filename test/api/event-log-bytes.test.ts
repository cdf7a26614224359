import t from 'tap'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer } from '../helpers/server.js'
import { demoIds } from '../helpers/demo-lab.js'
import { openLines, type LineStream } from '../helpers/streams.js'

type Line = [string, Record<string, unknown>, number]
const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }

/** The number of the line that brings this name. */
async function seqOf(lines: LineStream, name: string): Promise<number> {
  for (let count = 1; ; count++) {
    const line = ((await lines.until(count)) as Line[])[count - 1]
    if (line?.[1]['name_label'] === name) return line[2]
  }
}
/** the event log's byte bound: one VM record of the demo lab, not two, on either driver (1.5–2.1 KB each) */
const BOUND = 2800

t.test('the event log counts each change at its record\'s JSON bytes: past its byte bound, the oldest is let go and a resume from before it resyncs', async (t) => {
  const server = await startServer({ config: { restApi: { maxRamAllocatedToEventLog: BOUND / (1024 * 1024) } } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const vms = [demo.haltedVm, demo.runningVm, demo.pausedVm]
  // Names of one length: each change weighs its record's bytes, about as GET serves them.
  for (const [i, vm] of vms.entries()) {
    const bytes = (await (await fetch(`${server.url}/rest/v0/vms/${vm}`, { headers: admin })).arrayBuffer()).byteLength
    t.ok(bytes > BOUND / 2 && bytes < BOUND, `VM ${i}: ${bytes} B, between half the bound and the bound`)
  }
  const lines = await openLines(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=now`, admin)
  t.teardown(() => lines.close())
  const seqs: number[] = []
  for (const [i, vm] of vms.entries()) {
    t.equal((await server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: `bytes ${i}` }, 'PATCH'))).status, 204)
    seqs.push(await seqOf(lines, `bytes ${i}`))
  }
  const [first, , third] = seqs as [number, number, number]

  const held = await openLines(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=${third - 1}`, admin)
  t.teardown(() => held.close())
  t.same(((await held.until(1)) as Line[]).map((line) => line.slice(0, 2)), [['update', { name_label: 'bytes 2', href: `/rest/v0/vms/${demo.pausedVm}` }]], 'the newest change is held')
  const dropped = await openLines(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=${first}`, admin)
  t.teardown(() => dropped.close())
  t.same(((await dropped.until(1)) as Line[]).map((line) => line.slice(0, 2)), [['resync', null]], 'the second change was let go for the third one\'s bytes: a resume from the first cannot be served')
})
