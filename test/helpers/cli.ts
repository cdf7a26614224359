import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { packageRoot } from '../../src/paths.js'

const cli = join(packageRoot, 'dist/src/cli/main.js')

export interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI without blocking this process, which hosts the server it talks to. */
export function keel(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [cli, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })))
}
