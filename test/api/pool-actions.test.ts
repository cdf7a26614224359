import { join } from 'node:path'
import t from 'tap'
import type { LabSpec } from '../../src/driver/lab/spec.js'
import { loadLabSpec } from '../../src/driver/lab/spec.js'
import { fixturesDir } from '../../src/paths.js'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedAuth } from '../helpers/scoped-user.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startLabServer, startServer, type TestServer } from '../helpers/server.js'
import { openLines, openStream, sseEvents } from '../helpers/streams.js'

const overXapi = process.env['KEEL_TEST_DRIVER'] === 'xapi'

type Obj = Record<string, unknown>
const PASSWORD = 'a-user-password'

t.test('create_internal_network: a network of the pool with no PIF; bad input changes nothing', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/create_internal_network?sync=true`
  const networks = async (): Promise<string[]> => (await server.json<string[]>('/rest/v0/networks')).body

  const created = await server.json<Obj>(path, jsonBody({ name: 'inside', description: 'VM to VM', mtu: 9000 }))
  t.equal(created.status, 201)
  const id = String(created.body['id'])
  t.match((await server.json<Obj>(`/rest/v0/networks/${id}`)).body, { name_label: 'inside', name_description: 'VM to VM', MTU: 9000, PIFs: [], $pool: demo.pool })

  const before = await networks()
  t.match(await server.json(`/rest/v0/pools/nope/actions/create_internal_network?sync=true`, jsonBody({ name: 'x' })), { status: 404 })
  t.match(await server.json(path, jsonBody({ name: '', mtu: 9000 })), { status: 422, body: { data: { errors: [{ path: /name/ }] } } })
  t.match(await server.json(path, jsonBody({ name: 'x', mtu: 1 })), { status: 422, body: { data: { errors: [{ path: /mtu/ }] } } })

  const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'reader@example.net', password: PASSWORD }))
  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'reader' }))
  await server.json('/rest/v0/acl-privileges', jsonBody({ effect: 'allow', resource: 'pool', action: 'read', roleId: role.body.id }))
  await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${user.body.id}`, { method: 'PUT' })
  const reader = basic('reader@example.net', PASSWORD)
  t.match(await server.json(path, { ...jsonBody({ name: 'x' }), auth: reader }), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'pool', action: 'create:network' }] } },
  })
  t.same(await networks(), before)
})

const act = (server: TestServer, path: string, body?: unknown, auth?: string) =>
  server.json<Obj>(`${path}?sync=true`, { method: 'POST', ...(body === undefined ? {} : jsonBody(body)), ...(auth === undefined ? {} : { auth }) })
const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const list = async (server: TestServer, path: string): Promise<Obj[]> => (await server.json<Obj[]>(path)).body
/** The id of the object of `collection` with this name_label. */
const named = async (server: TestServer, collection: string, name: string): Promise<string> =>
  String((await list(server, `/rest/v0/${collection}?fields=id,name_label`)).find((object) => object['name_label'] === name)?.['id'])

/** Each host's PIF of a device, physical and untagged. */
async function pifsOf(server: TestServer, device: string): Promise<Obj[]> {
  return (await list(server, '/rest/v0/pifs?fields=id,device,vlan,physical,$host,$network,management')).filter((pif) => pif['device'] === device && pif['physical'] === true)
}

t.test('create_network: a VLAN network with a tagged PIF on every host; bad input changes nothing', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/create_network`
  const [eth1] = await pifsOf(server, 'eth1')
  const created = await act(server, path, { name: 'storage', description: 'iSCSI', mtu: 9000, nbd: true, pif: String(eth1?.['id']), vlan: 20 })
  t.equal(created.status, 201)
  const network = await get(server, `/rest/v0/networks/${String(created.body['id'])}`)
  t.match(network, { name_label: 'storage', name_description: 'iSCSI', MTU: 9000, nbd: true, isBonded: false, $pool: demo.pool })
  const pifs = await Promise.all((network['PIFs'] as string[]).map((id) => get(server, `/rest/v0/pifs/${id}`)))
  t.equal(pifs.length, 3)
  for (const pif of pifs) t.match(pif, { device: 'eth1', vlan: 20, physical: false, attached: true, management: false, mtu: 9000, $network: network['id'] })
  t.same(new Set(pifs.map((pif) => pif['$host'])), new Set([demo.master, demo.host2, demo.host3]))

  const before = { networks: await list(server, '/rest/v0/networks?fields=id'), pifs: await list(server, '/rest/v0/pifs?fields=id') }
  t.match(await act(server, path, { name: 'again', pif: String(eth1?.['id']), vlan: 20 }), { status: 409, body: { code: 'OBJECT_ALREADY_EXISTS' } })
  t.match(await act(server, path, { name: 'on a VLAN', pif: String(pifs[0]?.['id']), vlan: 30 }), { status: 422, body: { data: { errors: [{ path: 'body.pif' }] } } })
  t.match(await act(server, path, { name: 'x', pif: 'no-such-pif', vlan: 30 }), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, path, { name: 'x', pif: String(eth1?.['id']), vlan: 4095 }), { status: 422, body: { data: { errors: [{ path: /vlan/ }] } } })
  t.match(await act(server, path, { name: 'x', pif: String(eth1?.['id']) }), { status: 422, body: { code: 'INVALID_PARAMETERS' } })
  const poolOnly = await scopedAuth(server, 'pool-networks@example.org', [
    { resource: 'pool', action: 'create:network' },
    { resource: 'pif', action: 'read' },
  ])
  t.match(await act(server, path, { name: 'x', pif: String(eth1?.['id']), vlan: 30 }, poolOnly), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'network', action: 'create' }] } },
  })
  t.same({ networks: await list(server, '/rest/v0/networks?fields=id'), pifs: await list(server, '/rest/v0/pifs?fields=id') }, before, 'nothing changed')
})

t.test('create_bonded_network: a bond of the same devices on every host, the management role moving to it; bad input changes nothing', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/create_bonded_network`
  const eth0 = await pifsOf(server, 'eth0')
  const eth1 = await pifsOf(server, 'eth1')
  const onMaster = (pifs: Obj[]): string => String(pifs.find((pif) => pif['$host'] === demo.master)?.['id'])
  const onHost2 = (pifs: Obj[]): string => String(pifs.find((pif) => pif['$host'] === demo.host2)?.['id'])

  const before = { networks: await list(server, '/rest/v0/networks?fields=id'), pifs: await list(server, '/rest/v0/pifs') }
  t.match(await act(server, path, { name: 'x', pifIds: [onMaster(eth0)], bondMode: 'lacp' }), { status: 422, body: { data: { errors: [{ path: /pifIds/ }] } } })
  t.match(await act(server, path, { name: 'x', pifIds: [onMaster(eth0), onHost2(eth1)], bondMode: 'lacp' }), { status: 422, body: { data: { errors: [{ path: 'body.pifIds' }] } } })
  t.match(await act(server, path, { name: 'x', pifIds: [onMaster(eth0), onMaster(eth1)], bondMode: 'round-robin' }), { status: 422, body: { data: { errors: [{ path: /bondMode/ }] } } })
  t.match(await act(server, path, { name: 'x', pifIds: [onMaster(eth0), 'no-such-pif'], bondMode: 'lacp' }), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.same({ networks: await list(server, '/rest/v0/networks?fields=id'), pifs: await list(server, '/rest/v0/pifs') }, before, 'nothing changed')

  const created = await act(server, path, { name: 'bonded', pifIds: [onMaster(eth0), onMaster(eth1)], bondMode: 'active-backup' })
  t.equal(created.status, 201)
  const network = await get(server, `/rest/v0/networks/${String(created.body['id'])}`)
  t.match(network, { name_label: 'bonded', isBonded: true })
  const masters = await Promise.all((network['PIFs'] as string[]).map((id) => get(server, `/rest/v0/pifs/${id}`)))
  t.equal(masters.length, 3)
  for (const master of masters) {
    t.match(master, { isBondMaster: true, physical: false, management: true, mode: 'Static', device: 'bond0' })
    for (const slave of master['bondSlaves'] as string[]) t.match(await get(server, `/rest/v0/pifs/${slave}`), { isBondSlave: true, bondMaster: master['id'], management: false })
  }
  t.match(await act(server, path, { name: 'again', pifIds: [onMaster(eth0), onMaster(eth1)], bondMode: 'lacp' }), { status: 422, body: { data: { errors: [{ path: 'body.pifIds.0' }] } } })
})

t.test('management_reconfigure: every host restarts its toolstack on its PIF of the network; refusals change nothing', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/management_reconfigure`
  const eth0 = await pifsOf(server, 'eth0')
  const eth1 = await pifsOf(server, 'eth1')
  const management = String(eth0[0]?.['$network'])
  const guests = String(eth1[0]?.['$network'])
  const hosts = async () => list(server, '/rest/v0/hosts?fields=id,agentStartTime,address')
  const before = { hosts: await hosts(), pifs: await list(server, '/rest/v0/pifs?fields=id,management') }

  t.match(await act(server, path, { network: guests }), { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'mode', actual: 'None' } } })
  t.match(await act(server, path, { network: 'no-such-network' }), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, path, {}), { status: 422, body: { code: 'INVALID_PARAMETERS' } })
  const reader = await scopedAuth(server, 'net-reader@example.org', [
    { resource: 'pool', action: 'read' },
    { resource: 'network', action: 'read' },
    { resource: 'pif', action: 'read' },
  ])
  const refused = await act(server, path, { network: management }, reader)
  t.match(refused, { status: 403, body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'pif', action: 'update:management' }] } } })
  t.equal((refused.body['data'] as { missingPrivileges: unknown[] }).missingPrivileges.length, 3, 'one for each PIF of the network')
  t.same({ hosts: await hosts(), pifs: await list(server, '/rest/v0/pifs?fields=id,management') }, before, 'nothing changed')

  server.clock.advance(60_000)
  const allowed = await scopedAuth(server, 'net-admin@example.org', [
    { resource: 'pool', action: 'read' },
    { resource: 'network', action: 'read' },
    { resource: 'pif', action: 'update:management' },
  ])
  t.equal((await act(server, path, { network: management }, allowed)).status, 204)
  for (const [i, host] of (await hosts()).entries()) t.ok(Number(host['agentStartTime']) > Number(before.hosts[i]?.['agentStartTime']), `host ${String(host['id'])}'s toolstack restarted`)
  for (const pif of eth0) t.match(await get(server, `/rest/v0/pifs/${String(pif['id'])}`), { management: true })
})

t.test('rolling_update: the lab\u2019s missing patches installed on every host, each rebooted; VMs pinned to a host refuse it unless shut down', async (t) => {
  // Steps long enough for the task to be written between its start and its end (progress is written once a second at most).
  const server = await startServer({ config: { lab: { stepDelay: 100 } }, simulatorStepDelay: 100 })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/rolling_update`
  const missing = async (): Promise<Obj[]> => list(server, `/rest/v0/pools/${demo.pool}/missing_patches`)
  const patches = await missing()
  t.ok(patches.length > 0, 'the lab pool misses patches')
  const hosts = async () => list(server, '/rest/v0/hosts?fields=id,patches,startTime,power_state')
  const before = await hosts()

  t.match(await act(server, path), { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'power_state', expected: 'Halted' } } })
  t.match(await act(server, path, { shutdownPinnedVms: 'yes' }), { status: 422, body: { data: { errors: [{ path: /shutdownPinnedVms/ }] } } })
  t.match(await act(server, '/rest/v0/pools/no-such-pool/actions/rolling_update'), { status: 404 })
  const rebooter = await scopedAuth(server, 'rebooter@example.org', [{ resource: 'pool', action: 'read' }, { resource: 'pool', action: 'rolling-reboot' }])
  t.match(await act(server, path, { shutdownPinnedVms: true }, rebooter), { status: 403, body: { data: { missingPrivileges: [{ resource: 'pool', action: 'rolling-update' }] } } })
  t.same(await hosts(), before, 'nothing changed')
  t.same(await missing(), patches)

  server.clock.advance(60_000)
  const lines = await openLines(`${server.url}/rest/v0/tasks?ndjson=true&watch=true&fields=status,properties`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
  t.teardown(() => lines.close())
  const started = await server.json<{ taskId: string }>(path, jsonBody({ shutdownPinnedVms: true }))
  t.equal(started.status, 202)
  const seen = () => (lines.values as Array<[string, { status?: string; properties?: { progress?: number }; href?: string }]>).filter(([, task]) => task.href?.endsWith(started.body.taskId) === true).map(([, task]) => task)
  while (!seen().some((task) => task.status !== undefined && task.status !== 'pending')) await lines.until(lines.values.length + 1, 30_000)
  t.match(seen().at(-1), { status: 'success' })
  const progress = seen().flatMap((task) => task.properties?.progress ?? [])
  t.ok(progress.some((percent) => percent > 0 && percent < 100), `the task showed its progress (${progress.join(', ')})`)
  t.same(progress, [...progress].sort((a, b) => a - b), 'only ever forward')
  t.same(await missing(), [])
  for (const host of await hosts()) {
    t.match(host, { power_state: 'Running' })
    // XAPI keeps no list of an XCP-ng host's installed packages (XO's `patches` is empty there too): nothing missing says it.
    if (!overXapi) t.ok(patches.every((patch) => (host['patches'] as string[]).includes(String(patch['name']))), `host ${String(host['id'])} has every patch`)
    t.ok(Number(host['startTime']) > Number(before.find((old) => old['id'] === host['id'])?.['startTime']), 'and was rebooted')
  }
  t.match(await get(server, `/rest/v0/vms/${demo.localHaltedVm}`), { power_state: 'Halted' })
  t.equal((await act(server, path)).status, 204, 'nothing is left to install: nothing happens')
})

/** The demo lab and a branch pool of one host, with a halted VM on its local SR (and with `shared`, an NFS SR of its own). */
function labWithBranch(shared = false): LabSpec {
  const demo = loadLabSpec(join(fixturesDir, 'demo-lab.json'))
  const [template] = demo.pools[0]?.templates ?? []
  if (template === undefined) throw new Error('the demo lab has no template')
  return {
    ...demo,
    pools: [
      ...demo.pools,
      {
        name: 'Branch pool',
        hosts: [{ name: 'branch-01', address: '10.0.9.11', sockets: 1, cores: 8, memory: '64 GiB' }],
        networks: [
          { name: 'Branch management', device: 'eth0', subnet: '10.0.9.0/24', management: true },
          { name: 'Branch DMZ', device: 'eth3', subnet: '10.0.10.0/24' },
        ],
        srs: [{ name: 'Branch local storage', driver: 'lvm', size: '500 GiB', host: 'branch-01' }, ...(shared ? [{ name: 'Branch NFS', driver: 'nfs' as const, size: '1 TiB' }] : [])],
        templates: [{ ...template, name: 'Branch Debian' }],
        vms: [{ name: 'branch-app', template: 'Branch Debian', power: 'Halted', cpus: 1, memory: '1 GiB', disks: [{ size: '10 GiB', sr: 'Branch local storage' }], networks: ['Branch DMZ'] }],
      },
    ],
  }
}

// Over XAPI each pool is a simulator of its own, on a lab of its own: the host joins through pool.join from one to the other.
t.test('add_host joins a host alone in its pool: its PIFs onto the pool\u2019s networks, its local SR kept, a PBD to each shared SR; refusals change nothing', async (t) => {
  const server = await startServer({ app: { labSpec: labWithBranch() } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const branchPool = await named(server, 'pools', 'Branch pool')
  const branch = await named(server, 'hosts', 'branch-01')
  const vm = await named(server, 'vms', 'branch-app')
  const path = `/rest/v0/pools/${demo.pool}/actions/add_host`
  const state = async () => ({ hosts: await list(server, '/rest/v0/hosts?fields=id,$pool'), pools: await list(server, '/rest/v0/pools?fields=id'), pbds: await list(server, '/rest/v0/pbds?fields=id') })
  const before = await state()

  t.match(await act(server, path, { host: branch }), { status: 409, body: { code: 'INCORRECT_STATE', data: { object: vm, property: '$pool', actual: branchPool } } })
  t.match(await act(server, path, { host: demo.host2 }), { status: 422, body: { data: { errors: [{ path: 'body.host' }] } } })
  t.match(await act(server, `/rest/v0/pools/${branchPool}/actions/add_host`, { host: demo.host2 }), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: demo.pool, property: 'hosts', actual: 3, expected: 1 } },
  })
  t.match(await act(server, path, { host: 'no-such-host' }), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, path, { host: branch, force: 'yes' }), { status: 422, body: { data: { errors: [{ path: /force/ }] } } })
  const adder = await scopedAuth(server, 'adder@example.org', [{ resource: 'pool', action: 'add-host' }, { resource: 'host', action: 'read' }])
  t.match(await act(server, path, { host: branch }, adder), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'host', action: 'join-pool', objectId: branch }] } },
  })
  t.same(await state(), before, 'nothing changed')

  t.equal((await server.request(`/rest/v0/vms/${vm}`, { method: 'DELETE' })).status, 204)
  const kept = await server.json<{ id: string }>('/rest/v0/vdis', jsonBody({ srId: await named(server, 'srs', 'Branch local storage'), name_label: 'kept', virtual_size: 2 ** 21 }))
  t.equal(kept.status, 201)
  const joiner = await scopedAuth(server, 'joiner@example.org', [{ resource: 'pool', action: 'add-host' }, { resource: 'host', action: 'join-pool' }])
  t.equal((await act(server, path, { host: branch }, joiner)).status, 204)
  const host = await get(server, `/rest/v0/hosts/${branch}`)
  t.match(host, { $pool: demo.pool, power_state: 'Running' })
  t.equal((await server.request(`/rest/v0/pools/${branchPool}`)).status, 404, 'its old pool is gone')
  const pifs = await Promise.all((host['PIFs'] as string[]).map((id) => get(server, `/rest/v0/pifs/${id}`)))
  const masterEth0 = (await pifsOf(server, 'eth0')).find((pif) => pif['$host'] === demo.master)
  t.match(pifs.find((pif) => pif['device'] === 'eth0'), { $pool: demo.pool, $network: masterEth0?.['$network'], management: true })
  const dmz = pifs.find((pif) => pif['device'] === 'eth3')
  t.match(await get(server, `/rest/v0/networks/${String(dmz?.['$network'])}`), { name_label: 'Branch DMZ', $pool: demo.pool })
  t.equal(await named(server, 'networks', 'Branch management'), 'undefined', 'its own management network, now empty, is gone')
  const local = await get(server, `/rest/v0/srs/${await named(server, 'srs', 'Branch local storage')}`)
  t.match(local, { $pool: demo.pool, $container: branch })
  t.same(local['VDIs'], [kept.body.id], 'the disk on its local SR is kept')
  t.match(await get(server, `/rest/v0/vdis/${kept.body.id}`), { $pool: demo.pool })
  for (const sr of ['NFS shared storage', 'ISO library']) {
    const pbds = await Promise.all(((await get(server, `/rest/v0/srs/${await named(server, 'srs', sr)}`))['$PBDs'] as string[]).map((id) => get(server, `/rest/v0/pbds/${id}`)))
    t.ok(pbds.some((pbd) => pbd['host'] === branch && pbd['attached'] === true), `${sr} is plugged on the new host`)
  }
  t.equal((await list(server, `/rest/v0/vm-templates?fields=$pool`)).filter((template) => template['$pool'] === branchPool).length, 0)
})

t.test('add_host: a running VM or another version (without force) refuse it and change nothing; watchers see the host and its PIFs updated, the old pool removed, no resync', async (t) => {
  const { server, lab } = await startLabServer({ app: { labSpec: labWithBranch() } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const branchPool = await named(server, 'pools', 'Branch pool')
  const branch = await named(server, 'hosts', 'branch-01')
  const vm = await named(server, 'vms', 'branch-app')
  const path = `/rest/v0/pools/${demo.pool}/actions/add_host`
  const state = async () => ({ hosts: await list(server, '/rest/v0/hosts?fields=id,$pool'), pools: await list(server, '/rest/v0/pools?fields=id'), pifs: await list(server, '/rest/v0/pifs?fields=id,$pool,$network') })
  const before = await state()

  t.equal((await act(server, `/rest/v0/vms/${vm}/actions/start`)).status, 204)
  t.match(await act(server, path, { host: branch }), { status: 409, body: { code: 'INCORRECT_STATE', data: { object: vm, property: '$pool', actual: branchPool } } }, 'a running VM')
  t.equal((await act(server, `/rest/v0/vms/${vm}/actions/hard_shutdown`)).status, 204)
  t.equal((await server.request(`/rest/v0/vms/${vm}`, { method: 'DELETE' })).status, 204)

  // Another release on the master: the lab changes on its own, as a pool updated outside Keel.
  const master = lab.getObject(demo.master)
  if (master === undefined) throw new Error('no master in the lab')
  lab.applyChanges([{ kind: 'update', object: { ...master, version: '8.3.1' } }])
  while ((await get(server, `/rest/v0/hosts/${demo.master}`))['version'] !== '8.3.1') await server.app.driver.settled()
  t.match(await act(server, path, { host: branch }), { status: 409, body: { code: 'INCORRECT_STATE', data: { object: branch, property: 'version', expected: /8\.3\.1$/ } } })
  t.same(await state(), before, 'nothing changed')

  const { stream, id } = await (async () => {
    const opened = await openStream(`${server.url}/rest/v0/events`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
    const text = await opened.until((text) => /^event: init\ndata: \{"id":"[0-9a-f-]{36}"\}\n\n/.test(text))
    return { stream: opened, id: String(/"id":"([0-9a-f-]{36})"/.exec(text)?.[1]) }
  })()
  t.teardown(() => stream.close())
  for (const collection of ['host', 'pool', 'PIF']) t.equal((await server.json(`/rest/v0/events/${id}/subscriptions`, jsonBody({ collection, fields: ['id', '$pool'] }))).status, 201)

  t.equal((await act(server, path, { host: branch, force: true })).status, 204, 'force: another version joins')
  t.match(await get(server, `/rest/v0/hosts/${branch}`), { $pool: demo.pool })
  t.equal((await server.request(`/rest/v0/pools/${branchPool}`)).status, 404)
  await stream.until((text) => sseEvents(text).some((event) => event.event === 'remove' && (event.data as Obj)['id'] === branchPool))
  const events = sseEvents(stream.text()).filter((event) => event.event !== 'ping')
  const about = (object: string) => events.filter((event) => (event.data as Obj)['id'] === object).map((event) => [event.event, (event.data as Obj)['$pool']])
  t.same(about(branch), [['update', demo.pool]], 'the host is updated into the pool, never removed')
  const pifs = (await get(server, `/rest/v0/hosts/${branch}`))['PIFs'] as string[]
  for (const pif of pifs) t.same(about(pif), [['update', demo.pool]], `its PIF ${pif} too`)
  t.same(about(branchPool), [['remove', branchPool]], 'its old pool is removed')
  t.notOk(events.some((event) => event.event === 'resync'), 'no resync')
})

t.test('add_host: a host whose pool has a shared SR of its own is refused, nothing changed', async (t) => {
  const server = await startServer({ app: { labSpec: labWithBranch(true) } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const vm = await named(server, 'vms', 'branch-app')
  t.equal((await server.request(`/rest/v0/vms/${vm}`, { method: 'DELETE' })).status, 204)
  const before = await list(server, '/rest/v0/hosts?fields=id,$pool')
  t.match(await act(server, `/rest/v0/pools/${demo.pool}/actions/add_host`, { host: await named(server, 'hosts', 'branch-01') }), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: await named(server, 'srs', 'Branch NFS'), property: 'shared', actual: true } },
  })
  t.same(await list(server, '/rest/v0/hosts?fields=id,$pool'), before, 'nothing changed')
})
