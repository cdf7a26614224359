import { spawn } from 'node:child_process'
import t from 'tap'
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.js'
import { BRIDGE, bridgeEnv } from './bridge.js'

interface JsonRpcMessage {
  jsonrpc: string
  id?: number
  result?: Record<string, unknown>
  error?: { code: number; message: string }
}

/**
 * Talks raw JSON-RPC lines to the bridge and returns every stdout line, so the
 * test sees what a client would choke on (the SDK client skips non-JSON lines).
 */
async function exchange(env: Record<string, string>, messages: unknown[], expectedReplies: number): Promise<string[]> {
  const child = spawn(process.execPath, [BRIDGE], { env: bridgeEnv(env), stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  child.stderr.resume()
  const done = new Promise<void>((resolve, reject) => {
    // A hang detector with what was printed: a node child can take tens of seconds to start on a busy machine.
    const timer = setTimeout(() => reject(new Error(`timed out; stdout so far: ${stdout}`)), 90_000)
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stdout.split('\n').filter((line) => line !== '').length >= expectedReplies) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  for (const message of messages) child.stdin.write(JSON.stringify(message) + '\n')
  await done
  const exited = new Promise((resolve) => child.on('exit', resolve))
  child.stdin.end()
  await exited
  return stdout.split('\n').filter((line) => line !== '')
}

const initialize = (id: number, protocolVersion: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
})

t.test('stdout carries JSON-RPC only; the current and older protocol versions are accepted', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const env = { KEEL_URL: server.url, KEEL_USERNAME: ADMIN_EMAIL, KEEL_PASSWORD: ADMIN_PASSWORD }

  for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
    const lines = await exchange(
      env,
      [
        initialize(1, version),
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_infrastructure_summary', arguments: {} } },
        { jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: 'infrastructure-overview' } },
      ],
      3,
    )
    t.equal(lines.length, 3, `${version}: one line per reply, nothing else`)
    const replies = lines.map((line) => JSON.parse(line) as JsonRpcMessage)
    t.ok(replies.every((reply) => reply.jsonrpc === '2.0'))
    const byId = new Map(replies.map((reply) => [reply.id, reply]))
    t.equal(byId.get(1)?.result?.['protocolVersion'], version, `${version} is spoken`)
    t.match(byId.get(2)?.result, { structuredContent: { vms: { total: 12 } } })
    t.match(byId.get(3)?.result, { messages: [{ role: 'user' }] })
  }

  const [future] = await exchange(env, [initialize(1, '2099-01-01')], 1)
  t.equal((JSON.parse(future as string) as JsonRpcMessage).result?.['protocolVersion'], '2025-11-25', 'an unknown version gets the newest')

  const [unknownPrompt] = await exchange(env, [initialize(1, '2025-11-25'), { jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: 'nope' } }], 2).then(
    (lines) => lines.slice(1),
  )
  t.equal((JSON.parse(unknownPrompt as string) as JsonRpcMessage).error?.code, -32602)
})
