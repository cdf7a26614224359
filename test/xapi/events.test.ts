import t from 'tap'
import { startSimulator } from '../helpers/xapi-simulator.js'

interface Batch {
  events: Array<{ id: number; class: string; operation: string; ref: string; obj_uuid: string; snapshot: Record<string, unknown> }>
  valid_ref_counts: Record<string, number>
  token: string
}

t.test('event.from: everything from the empty token, then the changes after a token, waiting for them', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const initial = await xapi.call<Batch>('event.from', [session, ['vm', 'host'], '', 30.1])
  const vms = await xapi.call<string[]>('VM.get_all', [session])
  t.equal(initial.events.filter((e) => e.class === 'vm' && e.operation === 'add').length, vms.length, 'every VM as an add')
  t.same(initial.valid_ref_counts, { vm: vms.length, host: (await xapi.call<string[]>('host.get_all', [session])).length })
  const ref = vms.find((vm) => initial.events.find((e) => e.ref === vm)?.snapshot['is_control_domain'] === false)
  if (ref === undefined) throw new Error('a VM')

  const other = await xapi.login('second')
  const waiting = xapi.call<Batch>('event.from', [session, ['vm'], initial.token, 30.1])
  await xapi.call('VM.set_name_label', [other, ref, 'seen through events'])
  const batch = await waiting
  t.same(batch.events.map((e) => [e.class, e.operation, e.ref, e.snapshot['name_label']]), [['vm', 'mod', ref, 'seen through events']])
  t.ok(batch.token > initial.token, 'tokens grow, compared as strings')

  const quiet = await xapi.call<Batch>('event.from', [session, ['vm'], batch.token, 0.05])
  t.same(quiet.events, [], 'nothing new: an empty batch once the timeout passes')
  t.equal(quiet.token, batch.token)

  // A change to a class not watched moves the token without events.
  const host = (await xapi.call<string[]>('host.get_all', [session]))[0]
  await xapi.call('host.set_name_label', [other, host, 'renamed host'])
  const unwatched = await xapi.call<Batch>('event.from', [session, ['vm'], quiet.token, 0.05])
  t.same(unwatched.events, [])
  const hostBatch = await xapi.call<Batch>('event.from', [session, ['host', `vm/${ref}`], quiet.token, 0.05])
  t.same(hostBatch.events.map((e) => [e.class, e.ref]), [['host', host]])
})

t.test('a waiting event.from sees a set_tags that replaces many tags as one change, every tag in it', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const start = await xapi.call<Batch>('event.from', [session, ['vm'], '', 0])
  const ref = start.events.find((e) => e.snapshot['is_control_domain'] === false && e.snapshot['is_a_template'] === false)?.ref
  if (ref === undefined) throw new Error('a VM')
  await xapi.call('VM.set_tags', [session, ref, ['old-1', 'old-2', 'old-3']])
  const tagged = await xapi.call<Batch>('event.from', [session, ['vm'], start.token, 5])

  const tags = Array.from({ length: 20 }, (_, i) => `new-${i}`)
  const waiting = xapi.call<Batch>('event.from', [session, ['vm'], tagged.token, 30.1])
  await xapi.call('VM.set_tags', [session, ref, tags])
  const batch = await waiting
  t.same(batch.events.map((e) => [e.operation, e.ref, e.snapshot['tags']]), [['mod', ref, tags]], 'one event, with the tags the call set')
  const after = await xapi.call<Batch>('event.from', [session, ['vm'], batch.token, 0.05])
  t.same(after.events, [], 'nothing of the call left for the next poll')
})

t.test('event.inject gives a token that event.from reaches, with an event for the object', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const pool = (await xapi.call<string[]>('pool.get_all', [session]))[0]
  const start = await xapi.call<Batch>('event.from', [session, ['pool'], '', 0])
  const injected = await xapi.call<string>('event.inject', [session, 'pool', pool])
  t.ok(injected > start.token)
  const batch = await xapi.call<Batch>('event.from', [session, ['*'], start.token, 5])
  t.same(batch.events.map((e) => [e.class, e.operation, e.ref]), [['pool', 'mod', pool]])
  t.ok(batch.token >= injected, 'the barrier is passed')
  t.equal(typeof (await xapi.call('event.get_current_id', [session])), 'number')
  t.same(await xapi.json('event.inject', [session, 'pool', 'OpaqueRef:nope']), { error: ['HANDLE_INVALID', 'pool', 'OpaqueRef:nope'] })
})

t.test('event.from refuses tokens it cannot serve: EVENTS_LOST past the kept log, a parse failure for garbage', async (t) => {
  const xapi = await startSimulator(t, { eventLogSize: 4 })
  const session = await xapi.login()
  const start = await xapi.call<Batch>('event.from', [session, ['vm'], '', 0])
  const ref = start.events[0]?.ref
  for (let i = 0; i < 10; i++) await xapi.call('VM.add_to_other_config', [session, ref, `key${i}`, 'v'])
  t.same(await xapi.json('event.from', [session, ['vm'], start.token, 0]), { error: ['EVENTS_LOST'] })
  t.same(await xapi.json('event.from', [session, ['vm'], 'not-a-token', 0]), { error: ['EVENT_FROM_TOKEN_PARSE_FAILURE', 'not-a-token'] })
  t.same(await xapi.json('event.from', [session, ['vm'], '99999999999999999999', 0]), { error: ['EVENTS_LOST'] }, 'a token from the future (a restart)')
  t.same(await xapi.json('event.from', [session, 'vm', start.token, 0]), { error: ['FIELD_TYPE_ERROR', 'classes'] })
  const fresh = await xapi.call<Batch>('event.from', [session, ['vm'], '', 0])
  t.ok(fresh.events.length > 0, 'starting over works')
})

t.test('a session logged out while event.from waits gets SESSION_INVALID', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const start = await xapi.call<Batch>('event.from', [session, ['vm'], '', 0])
  const waiting = xapi.json('event.from', [session, ['vm'], start.token, 30])
  await xapi.call('session.logout', [session])
  t.same(await waiting, { error: ['SESSION_INVALID', session] })
})
