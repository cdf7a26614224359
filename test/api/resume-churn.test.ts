import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer } from '../helpers/server.js'
import { openStream, sseEvents } from '../helpers/streams.js'

const INIT = /^event: init\ndata: \{"id":"([0-9a-f-]{36})"\}\n\n/
const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }
const complete = (text: string): string => text.slice(0, text.lastIndexOf('\n\n') + 2)

t.test('a record changing all the time does not push the others out of the resume window', async (t) => {
  // Three events at most: without keeping a record's updates as one, the churn below would leave only itself.
  const server = await startServer({ config: { restApi: { eventLogMaxEvents: 3, eventResumeMinimum: 0 } } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const rename = (vm: string, name: string) => server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: name }, 'PATCH'))
  const open = async (headers: Record<string, string>) => {
    const stream = await openStream(`${server.url}/rest/v0/events`, headers)
    t.teardown(() => stream.close())
    const id = (INIT.exec(await stream.until((text) => INIT.test(text))) as RegExpExecArray)[1] as string
    const subscribed = await server.json(`/rest/v0/events/${id}/subscriptions`, jsonBody({ collection: 'VM', fields: ['name_label'] }))
    t.equal(subscribed.status, 201)
    return stream
  }

  const first = await open(admin)
  await rename(demo.haltedVm, 'seen')
  await first.until((text) => complete(text).includes('"seen"'))
  const lastId = sseEvents(first.text()).find((event) => event.event === 'update')?.id as string
  first.close()
  await rename(demo.runningVm, 'changed-once')
  for (let i = 1; i <= 50; i++) await rename(demo.haltedVm, `churn-${i}`)

  const again = await open({ ...admin, 'last-event-id': lastId })
  await again.until((text) => complete(text).includes('churn-50'))
  const events = sseEvents(again.text()).filter((event) => event.event !== 'init')
  t.same(
    events.map((event) => [event.event, event.data]),
    [
      ['update', { $subscription: 'VM', name_label: 'changed-once' }],
      ['update', { $subscription: 'VM', name_label: 'churn-50' }],
    ],
    'the other change, then the busy record’s latest state once',
  )
  const metrics = await (await server.request('/metrics')).text()
  t.match(metrics, /^keel_event_resume_window_seconds\{collection="VM"\} \d/m, 'the resume window is reported per collection')
})
