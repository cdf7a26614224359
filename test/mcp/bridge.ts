import { spawn } from 'node:child_process'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { packageRoot } from '../../src/paths.js'
import { jsonBody, type TestServer } from '../helpers/server.js'

/** The built executable, as `npx keel-mcp` runs it. */
export const BRIDGE = join(packageRoot, 'dist/src/mcp/main.js')

export interface Bridge {
  readonly client: Client
  /** everything the bridge wrote to stderr so far */
  stderr(): string
  /** calls a tool and returns its result and the text of its first block */
  call(name: string, args?: Record<string, unknown>): Promise<{ result: CallToolResult; text: string }>
  close(): Promise<void>
}

/** The child gets this environment and nothing else from ours but PATH. */
export function bridgeEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env['PATH'] ?? '', ...env }
}

/** Starts the built bridge over stdio with the SDK's own client, and lists its tools (so outputs are validated). */
export async function startBridge(env: Record<string, string>): Promise<Bridge> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BRIDGE], env: bridgeEnv(env), stderr: 'pipe' })
  let stderr = ''
  ;(transport.stderr as Readable | null)?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'keel-mcp-test', version: '1.0.0' })
  await client.connect(transport)
  await client.listTools()
  return {
    client,
    stderr: () => stderr,
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult
      const first = result.content[0]
      return { result, text: first?.type === 'text' ? first.text : '' }
    },
    close: () => client.close(),
  }
}

/** Runs the bridge without a client, for start-up failures: exit code and stderr. */
export function runBridge(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BRIDGE], { env: bridgeEnv(env), stdio: ['pipe', 'pipe', 'pipe'] })
    let stderr = ''
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, stderr, stdout }))
  })
}

export interface Token {
  id: string
  identifier: string
  user_id: string
}

export async function adminId(server: TestServer): Promise<string> {
  const { body } = await server.json<Array<{ id: string; email: string }>>('/rest/v0/users?fields=id,email')
  const admin = body.find((user) => user.email === 'admin@admin.net')
  if (admin === undefined) throw new Error('no administrator')
  return admin.id
}

export async function createToken(server: TestServer, userId: string, body: Record<string, unknown> = {}, auth?: string): Promise<Token> {
  const created = await server.json<{ token: Token }>(`/rest/v0/users/${userId}/authentication_tokens`, {
    ...jsonBody(body),
    ...(auth === undefined ? {} : { auth }),
  })
  if (created.status !== 201) throw new Error(`token creation failed: ${created.status} ${JSON.stringify(created.body)}`)
  return created.body.token
}
