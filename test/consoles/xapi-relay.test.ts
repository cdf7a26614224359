import t from 'tap'
import { mustOpen, typeAndSee } from '../helpers/console-socket.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer } from '../helpers/server.js'
import { injectFault } from '../helpers/xapi-driver.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

interface Vm {
  readonly id: string
  readonly name_label: string
  readonly power_state: string
  readonly $container: string
}

t.test('consoles over the XAPI driver: relayed from the host the VM runs on (issue 31)', async (t) => {
  // Its hosts answer on 127.0.0.1, .2, .3: a console's location names the VM's own host.
  const xapi = await startSimulator(t)
  const pools = [{ host: xapi.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }]
  const server = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools } } })
  t.teardown(() => server.close())
  const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }
  const [pool] = (await server.json<Array<{ master: string }>>('/rest/v0/pools?fields=master')).body
  const hosts = (await server.json<Array<{ id: string; name_label: string; address: string }>>('/rest/v0/hosts?fields=id,name_label,address')).body
  const vms = (await server.json<Vm[]>('/rest/v0/vms?fields=id,name_label,power_state,$container')).body
  const onMember = vms.find((vm) => vm.power_state === 'Running' && vm.$container !== pool?.master)
  const member = hosts.find((host) => host.id === onMember?.$container)
  if (onMember === undefined || member === undefined || member.address === new URL(xapi.url).hostname) throw new Error('the demo lab has a VM running on a member with an address of its own')

  t.test('a VM on a member: its handshake, its screen, a key typed is echoed', async (t) => {
    const { ws, viewer, closed } = await mustOpen(server.url, onMember.id, admin)
    t.equal(viewer.name, onMember.name_label)
    t.same([viewer.width, viewer.height], [640, 400])
    const column = `${onMember.name_label.toLowerCase()} login: `.length
    const updates = viewer.updates
    viewer.requestUpdate(false)
    await viewer.until(() => viewer.updates > updates)
    t.notOk(viewer.cellLit(column, 7), 'nothing typed yet')
    await typeAndSee(viewer, 'k')
    t.ok(viewer.cellLit(column, 7), 'the key went to the pool and its echo came back')
    ws.close()
    t.equal((await closed).code, 1005)
  })

  t.test('a member host\u2019s console is its control domain\u2019s, on that host', async (t) => {
    const { ws, viewer, closed } = await mustOpen(server.url, member.id, admin)
    t.equal(viewer.name, member.name_label)
    await typeAndSee(viewer, 'x')
    ws.close()
    await closed
  })

  t.test('the VM stopped through the API closes its console with the reason', async (t) => {
    const { closed, viewer } = await mustOpen(server.url, onMember.id, admin)
    await typeAndSee(viewer, 'a')
    const stop = await server.request(`/rest/v0/vms/${onMember.id}/actions/hard_shutdown`, { method: 'POST' })
    t.equal(stop.status, 202)
    t.same(await closed, { code: 1000, reason: 'the VM stopped' })
    t.equal((await server.json<Vm>(`/rest/v0/vms/${onMember.id}`)).body.power_state, 'Halted')
  })

  t.test('a host of the pool going down closes the consoles it served', async (t) => {
    const { closed, viewer } = await mustOpen(server.url, member.id, admin)
    await typeAndSee(viewer, 'b')
    await injectFault(xapi.url, { stop_member: member.address })
    t.same(await closed, { code: 1000, reason: 'the pool closed the console' })
  })
})
