import { Agent, request as httpRequest } from 'node:http'
import t from 'tap'
import { basic, jsonBody, startServer, ADMIN_EMAIL, ADMIN_PASSWORD } from '../helpers/server.js'
import { demoIds } from '../helpers/demo-lab.js'

t.test('one keep-alive connection repeating and alternating its requests gets each object as it is now', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  /** A request on the one connection: its status, its JSON body, and whether the connection was the one already open. */
  const onIt = (method: string, path: string): Promise<{ status: number; body: Record<string, unknown>; reused: boolean }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(server.url + path, { method, agent, headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString()
          resolve({ status: res.statusCode ?? 0, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), reused: req.reusedSocket })
        })
      })
      req.once('error', reject)
      req.end()
    })

  const running = `/rest/v0/vms/${demo.runningVm}`
  const halted = `/rest/v0/vms/${demo.haltedVm}`
  t.match(await onIt('GET', running), { status: 200, body: { id: demo.runningVm, name_label: 'web-01' }, reused: false })
  t.match(await onIt('GET', running), { status: 200, body: { id: demo.runningVm, name_label: 'web-01' }, reused: true }, 'the same line again')
  t.match(await onIt('GET', running), { status: 200, body: { id: demo.runningVm }, reused: true }, 'and once more')
  t.match(await onIt('GET', halted), { status: 200, body: { id: demo.haltedVm, name_label: 'staging-app' }, reused: true }, 'another line')
  t.match(await onIt('GET', running), { status: 200, body: { id: demo.runningVm }, reused: true }, 'back to the first')
  t.match(await onIt('GET', `${running}?fields=name_label`), { status: 200, body: { id: demo.runningVm }, reused: true }, 'its query string changed')

  t.equal((await server.request(running, jsonBody({ nameLabel: 'web-01-renamed' }, 'PATCH'))).status, 204, 'renamed on another connection')
  t.match(await onIt('GET', running), { status: 200, body: { name_label: 'web-01-renamed' }, reused: true }, 'the repeated line sees the new name')
  t.match(await onIt('GET', running), { status: 200, body: { name_label: 'web-01-renamed' }, reused: true })

  t.equal((await server.request(running, { method: 'DELETE' })).status, 204, 'deleted on another connection')
  t.match(await onIt('GET', running), { status: 404, body: { code: 'NO_SUCH_OBJECT', data: { id: demo.runningVm } }, reused: true }, 'the repeated line finds it gone')
  t.match(await onIt('GET', running), { status: 404, body: { code: 'NO_SUCH_OBJECT' }, reused: true })
  t.match(await onIt('DELETE', running), { status: 404, body: { code: 'NO_SUCH_OBJECT' }, reused: true }, 'another method on the same target')
  t.match(await onIt('GET', '/rest/v0/nowhere'), { status: 404, body: { code: 'NO_SUCH_ROUTE' }, reused: true })
  t.match(await onIt('GET', halted), { status: 200, body: { id: demo.haltedVm }, reused: true })
})
