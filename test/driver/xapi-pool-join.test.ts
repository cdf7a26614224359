import t from 'tap'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
import { XapiError } from '../../src/driver/xapi/types.js'
import { branchLab } from '../helpers/branch-lab.js'
import type { TestScope } from '../helpers/lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openLines } from '../helpers/streams.js'
import { failure } from '../helpers/xapi-driver.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

type Obj = Record<string, unknown>

/** A server on the XAPI driver whatever KEEL_TEST_DRIVER says, its pools connected through `servers` entries only. */
async function xapiServer(t: TestScope): Promise<TestServer> {
  const server = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools: [] } } })
  t.teardown(() => server.close())
  return server
}

/** A servers entry for `host`, once connected (its status followed on a watch). */
async function connected(server: TestServer, host: string): Promise<{ id: string; poolId: string }> {
  const watch = await openLines(`${server.url}/rest/v0/servers?ndjson=true&watch=true&fields=status,poolId`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
  try {
    const created = await server.json<{ id: string }>('/rest/v0/servers', jsonBody({ host, username: 'root', password: PASSWORD }))
    if (created.status !== 201) throw new Error(`servers: ${created.status}`)
    for (let seen = 0; ; seen++) {
      const [, record] = ((await watch.until(seen + 1))[seen] ?? []) as [string, Obj]
      if (record['href'] === `/rest/v0/servers/${created.body.id}` && record['status'] === 'connected') return { id: created.body.id, poolId: String(record['poolId']) }
    }
  } finally {
    watch.close()
  }
}

const named = async (server: TestServer, collection: string, name: string): Promise<string> =>
  String((await server.json<Obj[]>(`/rest/v0/${collection}?fields=id,name_label`)).body.find((object) => object['name_label'] === name)?.['id'])

/** A pool to join (the demo lab's) and a branch host alone in a pool of its own, each connected through a `servers` entry. */
async function twoPools(t: TestScope, targetUrl?: (master: string) => string) {
  const master = await startSimulator(t)
  const joiner = await startSimulator(t, { spec: branchLab({ vm: false }) })
  const server = await xapiServer(t)
  const target = await connected(server, targetUrl?.(master.url) ?? master.url)
  const source = await connected(server, joiner.url)
  const host = await named(server, 'hosts', 'branch-01')
  return { joiner, server, target, source, host }
}

t.test('add_host over pools connected through servers entries: the joiner\u2019s entry is removed, as the reference unregisters a merged pool\u2019s server', async (t) => {
  const { server, target, source, host } = await twoPools(t)
  const watch = await openLines(`${server.url}/rest/v0/servers?ndjson=true&watch=true`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
  t.teardown(() => watch.close())

  const joined = await server.json(`/rest/v0/pools/${target.poolId}/actions/add_host?sync=true`, jsonBody({ host }))
  t.equal(joined.status, 204, JSON.stringify(joined.body))
  t.match((await server.json<Obj>(`/rest/v0/hosts/${host}`)).body, { $pool: target.poolId })
  t.equal((await server.request(`/rest/v0/pools/${source.poolId}`)).status, 404, 'the joiner\u2019s pool is gone')
  const removed = (): boolean => (watch.values as Array<[string, string]>).some(([kind, href]) => kind === 'remove' && href === `/rest/v0/servers/${source.id}`)
  while (!removed()) await watch.until(watch.values.length + 1)
  t.same((await server.json<string[]>('/rest/v0/servers')).body, [`/rest/v0/servers/${target.id}`], 'only the target\u2019s entry is left')
  t.equal(server.app.xapi?.pools.length, 1, 'one connection, the target pool\u2019s')
})

t.test('add_host on a pool connected through a member\u2019s address: the joiner is given the master\u2019s, where the member would answer it HOST_IS_SLAVE', async (t) => {
  const { server, target, host } = await twoPools(t, (master) => `http://127.0.0.2:${new URL(master).port}`)

  const joined = await server.json(`/rest/v0/pools/${target.poolId}/actions/add_host?sync=true`, jsonBody({ host }))
  t.equal(joined.status, 204, JSON.stringify(joined.body))
  t.match((await server.json<Obj>(`/rest/v0/hosts/${host}`)).body, { $pool: target.poolId })
})

t.test('add_host: a XAPI refusal of pool.join ends the task as XAPI_ERROR with its code, answered with sync=true as the reference answers a XapiError; nothing changed, the joiner still connected', async (t) => {
  const { joiner, server, target, source, host } = await twoPools(t)
  // Another product: `force` passes Keel's version check (as the lab's), XAPI refuses it all the same (HOSTS_NOT_COMPATIBLE).
  const lab = joiner.simulator.services.driver
  const record = lab.getObject(host)
  if (record === undefined) throw new Error('no joining host in its lab')
  lab.applyChanges([{ kind: 'update', object: { ...record, productBrand: 'XenServer' } }])
  while ((await server.json<Obj>(`/rest/v0/hosts/${host}`)).body['productBrand'] !== 'XenServer') await server.app.driver.settled()
  const before = (await server.json<Obj[]>('/rest/v0/hosts?fields=id,$pool')).body

  const started = await server.json<{ taskId: string }>(`/rest/v0/pools/${target.poolId}/actions/add_host`, jsonBody({ host, force: true }))
  t.equal(started.status, 202)
  const task = await server.json<Obj>(`/rest/v0/tasks/${started.body.taskId}?wait=true`)
  t.match(task.body, { status: 'failure', result: { code: 'XAPI_ERROR', data: { code: 'HOSTS_NOT_COMPATIBLE', params: [] } } })
  const sync = await server.json<Obj>(`/rest/v0/pools/${target.poolId}/actions/add_host?sync=true`, jsonBody({ host, force: true }))
  t.equal(sync.status, 500, 'with sync=true: the reference\u2019s 500 for a XapiError')
  t.same(sync.body, { error: 'HOSTS_NOT_COMPATIBLE', code: 'XAPI_ERROR', data: { code: 'HOSTS_NOT_COMPATIBLE', params: [] }, info: 'This is a XenServer/XCP-ng error, not an XO error' })
  t.same((await server.json<Obj[]>('/rest/v0/hosts?fields=id,$pool')).body, before, 'nothing changed')
  t.equal((await server.json<Obj>(`/rest/v0/servers/${source.id}`)).body['status'], 'connected')
  t.equal((await server.request(`/rest/v0/hosts/${host}`, jsonBody({ name_label: 'renamed after' }, 'PATCH'))).status, 204, 'the joiner\u2019s pool is served as before')
  t.match((await server.json<Obj>(`/rest/v0/hosts/${host}`)).body, { name_label: 'renamed after', $pool: source.poolId })
})

t.test('merge: what the joiner changes while the join runs is held, and released as it came when the join fails', async (t) => {
  const master = await startSimulator(t)
  const joiner = await startSimulator(t, { spec: branchLab({ vm: false }) })
  const settings = (host: string) => ({ host, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false })
  const driver = new XapiDriver({ allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools: [settings(master.url), settings(joiner.url)] })
  t.teardown(() => driver.close())
  await driver.open()
  const [targetPool, joinerPool] = driver.pools
  if (targetPool === undefined || joinerPool === undefined) throw new Error('two pools')
  const host = [...driver.objectsOfType('host')].find((record) => record['$pool'] === joinerPool.poolId)
  if (host === undefined) throw new Error('no joining host')
  const refused = new XapiError('JOINING_HOST_CONNECTION_FAILED')

  const error = await failure(
    driver.merge(joinerPool.poolId, targetPool.poolId, host.id, async (pool) => {
      await pool.call('host.set_name_label', [String(host['_xapiRef']), 'renamed meanwhile'])
      await pool.settled()
      t.equal(driver.getObject(host.id)?.['name_label'], 'branch-01', 'the change is held while the join runs')
      throw refused
    }),
  )
  t.equal(error, refused)
  t.equal(driver.getObject(host.id)?.['name_label'], 'renamed meanwhile', 'released once it failed')
  t.equal(driver.pools.length, 2, 'both pools still connected')
})
