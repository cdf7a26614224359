import t from 'tap'
import { subCollections } from '../../src/api/sub-collections.js'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { jsonBody, startServer } from '../helpers/server.js'
import { ndjsonValues } from '../helpers/streams.js'

type Obj = Record<string, unknown>
interface ErrorBody {
  code: string
  data: Obj
}

t.test('per-object listings', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const messages = (await server.json<Array<{ id: string; name: string; $object: string }>>('/rest/v0/messages?fields=id,name,$object')).body
  const alarm = messages.find((message) => message.name === 'ALARM')
  if (alarm === undefined) throw new Error('the demo lab has no alarm')

  t.test('every declared listing answers for an object of each of its collections', async (t) => {
    for (const row of subCollections) {
      for (const parent of row.parents) {
        const listing = await server.json<Array<{ id: string }>>(`/rest/v0/${parent}?fields=id&limit=1`)
        if (listing.status === 404) {
          // Its row names it before its collection exists: no collection, no listing route.
          t.equal(parent, 'servers', 'only the servers registry (issue 28) is not a collection yet')
          t.equal((await server.json(`/rest/v0/${parent}/any/${row.name}`)).status, 404)
          continue
        }
        const [first] = listing.body
        if (first === undefined) continue
        const { status, body } = await server.json<string[]>(`/rest/v0/${parent}/${first.id}/${row.name}`)
        t.equal(status, 200, `${parent}/<id>/${row.name}`)
        t.ok(body.every((href) => href.startsWith(`/rest/v0/${row.items(parent)}/`)), 'hrefs into the listed collection')
      }
    }
  })

  t.test('a VM\'s disks, with fields, and a snapshot\'s as VDI snapshots', async (t) => {
    const vm = (await server.json<{ $VBDs: string[] }>(`/rest/v0/vms/${demo.snapshottedVm}`)).body
    const expected: string[] = []
    for (const vbd of vm.$VBDs) {
      const record = (await server.json<{ VDI: string; is_cd_drive: boolean }>(`/rest/v0/vbds/${vbd}`)).body
      expected.push(`/rest/v0/vdis/${record.VDI}`)
    }
    t.same((await server.json<string[]>(`/rest/v0/vms/${demo.snapshottedVm}/vdis`)).body.sort(), expected.sort())
    const withFields = (await server.json<Obj[]>(`/rest/v0/vms/${demo.snapshottedVm}/vdis?fields=name_label,VDI_type`)).body
    t.ok(withFields.length > 0 && withFields.every((vdi) => Object.keys(vdi).sort().join() === 'VDI_type,href,name_label'))
    const [snapshot] = (await server.json<Array<{ id: string }>>('/rest/v0/vm-snapshots?fields=id')).body
    const snapshotDisks = (await server.json<string[]>(`/rest/v0/vm-snapshots/${snapshot?.id}/vdis`)).body
    t.ok(snapshotDisks.length > 0 && snapshotDisks.every((href) => href.startsWith('/rest/v0/vdi-snapshots/')))
  })

  t.test('alarms and messages of an object: an alarm is listed as one, never as a message', async (t) => {
    const alarms = (await server.json<string[]>(`/rest/v0/vms/${alarm.$object}/alarms`)).body
    t.same(alarms, [`/rest/v0/alarms/${alarm.id}`])
    const others = messages.filter((message) => message.$object === alarm.$object && message.name !== 'ALARM').map((message) => `/rest/v0/messages/${message.id}`)
    t.same((await server.json<string[]>(`/rest/v0/vms/${alarm.$object}/messages`)).body, others)
    const started = messages.find((message) => message.name === 'VM_STARTED')
    t.same((await server.json<string[]>(`/rest/v0/vms/${started?.$object}/messages?filter=name:VM_STARTED`)).body, [`/rest/v0/messages/${started?.id}`])
    t.same((await server.json<string[]>(`/rest/v0/vms/${started?.$object}/alarms`)).body, [])
  })

  t.test('an object\'s tasks, with the collection parameters', async (t) => {
    const started = await server.json<{ taskId: string }>(`/rest/v0/vms/${demo.haltedVm}/actions/start`, { method: 'POST' })
    await server.json(`/rest/v0/tasks/${started.body.taskId}?wait=true`)
    const path = `/rest/v0/vms/${demo.haltedVm}/tasks`
    t.same((await server.json<string[]>(path)).body, [`/rest/v0/tasks/${started.body.taskId}`])
    t.same((await server.json<Obj[]>(`${path}?fields=status&filter=status:success`)).body, [{ status: 'success', href: `/rest/v0/tasks/${started.body.taskId}` }])
    t.same((await server.json<Obj[]>(`${path}?filter=status:failure`)).body, [])
    t.same((await server.json<Obj[]>(`${path}?limit=0`)).body, [])
    const lines = await ndjsonValues<Obj>(await server.request(`${path}?ndjson=true&fields=id`))
    t.same(lines, [{ id: started.body.taskId, href: `/rest/v0/tasks/${started.body.taskId}` }])
    t.same((await server.json<string[]>(`/rest/v0/vms/${demo.runningVm}/tasks`)).body, [], 'another VM\'s tasks are not its')
    await server.json(`/rest/v0/vms/${demo.haltedVm}/actions/hard_shutdown?sync=true`, { method: 'POST' })
  })

  t.test('a user\'s groups and a group\'s users', async (t) => {
    const user = await scopedUser(server, 'member@example.net', [])
    const group = await server.json<{ id: string }>('/rest/v0/groups', jsonBody({ name: 'members' }))
    await server.request(`/rest/v0/groups/${group.body.id}/users/${user.id}`, { method: 'PUT' })
    t.same((await server.json<string[]>(`/rest/v0/users/${user.id}/groups`)).body, [`/rest/v0/groups/${group.body.id}`])
    t.same((await server.json<Obj[]>(`/rest/v0/groups/${group.body.id}/users?fields=email`)).body, [{ email: 'member@example.net', href: `/rest/v0/users/${user.id}` }])
    const own = await server.json<string[]>(`/rest/v0/users/${user.id}/groups`, { auth: user.auth })
    t.equal(own.status, 200, 'a user may list their own groups')
    t.same(own.body, [], 'but sees only the groups they may read')
    t.equal((await server.json(`/rest/v0/groups/${group.body.id}/users`, { auth: user.auth })).status, 403)
  })

  t.test('refusals', async (t) => {
    const missing = await server.json<ErrorBody>('/rest/v0/vms/nope/tasks')
    t.equal(missing.status, 404)
    t.same(missing.body.data, { id: 'nope', type: 'VM' })
    t.equal((await server.json<ErrorBody>(`/rest/v0/vms/${demo.master}/vdis`)).status, 404, 'a host is no VM')
    const badFilter = await server.json<ErrorBody>(`/rest/v0/vms/${demo.runningVm}/messages?filter=(`)
    t.equal(badFilter.status, 400)
    t.equal(badFilter.body.code, 'FILTER_PARSE_ERROR')
    const badLimit = await server.json<ErrorBody>(`/rest/v0/vms/${demo.runningVm}/messages?limit=-1`)
    t.equal(badLimit.status, 400)
    t.equal(badLimit.body.data['parameter'], 'limit')

    const tagged = await scopedUser(server, 'prod-reader@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:prod' }])
    t.equal((await server.json(`/rest/v0/vms/${demo.runningVm}/vdis`, { auth: tagged.auth })).status, 200)
    t.same((await server.json(`/rest/v0/vms/${demo.runningVm}/vdis`, { auth: tagged.auth })).body, [], 'no VDI read: an empty list')
    const refused = await server.json<ErrorBody>(`/rest/v0/vms/${demo.haltedVm}/tasks`, { auth: tagged.auth })
    t.equal(refused.status, 403, 'a VM outside the selector')
    t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
    const withDisks = await scopedUser(server, 'disk-reader@example.net', [
      { resource: 'vm', action: 'read' },
      { resource: 'vdi', action: 'read' },
    ])
    t.ok((await server.json<string[]>(`/rest/v0/vms/${demo.runningVm}/vdis`, { auth: withDisks.auth })).body.length > 0)
  })
})
