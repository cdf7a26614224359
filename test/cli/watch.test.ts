import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { packageRoot } from '../../src/paths.js'
import { jsonBody, startServer } from '../helpers/server.js'
import { demoIds } from '../helpers/demo-lab.js'

const cli = join(packageRoot, 'dist/src/cli/main.js')

t.test('keel watch prints changes and resumes after a dropped connection', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  const token = (await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })).body.token.id
  const start = (extra: string[]) => {
    const child = spawn(process.execPath, [cli, 'watch', 'vms', '--url', server.url, '--fields', 'name_label', ...extra], {
      env: { PATH: process.env['PATH'] ?? '', KEEL_TOKEN: token },
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    t.teardown(() => child.kill())
    return { child, out: () => out }
  }
  const rename = async (name: string): Promise<void> => {
    // The first try may meet a keep-alive connection the test itself cut.
    await server.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: name }, 'PATCH')).catch(() =>
      server.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: name }, 'PATCH')),
    )
  }
  /** renames until the watcher shows it: the watch may not be connected yet, however long its start takes */
  const shown = async (out: () => string, name: string, repeat: boolean): Promise<void> => {
    for (let i = 0; !out().includes(name); i++) {
      if (repeat || i === 0) await rename(`${name}-${i}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const readable = start([])
  await shown(readable.out, 'cli-first', true)
  t.match(readable.out(), new RegExp(`update /rest/v0/vms/${demo.haltedVm} name_label=cli-first-\\d+`))

  server.app.server.closeAllConnections()
  await rename('cli-while-away')
  await shown(readable.out, 'cli-while-away', false)
  t.match(readable.out(), 'name_label=cli-while-away', 'the change made while disconnected arrives after resuming')

  const json = start(['--json'])
  await shown(json.out, 'cli-json', true)
  const line = JSON.parse(json.out().trim().split('\n').at(-1) as string) as unknown[]
  t.match(line, ['update', { name_label: /^cli-json-\d+$/, href: `/rest/v0/vms/${demo.haltedVm}` }, Number])
})
