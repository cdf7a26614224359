#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=4 --expose-gc --initial-old-space-size=64 --heap-growing-percent=50
import { resolve } from 'node:path'
import { createApp } from '../app.js'
import { ConfigError, loadConfig } from '../config/config.js'
import { generateLab } from './lab.js'
import { serveXapi } from './xapi.js'
import { createToken } from './token.js'
import { watch } from './watch.js'
import { vdi } from './vdi.js'
import { vm } from './vm.js'
import { backup } from './backup.js'
import { CliError } from './errors.js'
import { parseCommand } from './args.js'

const usage = `Usage:
  keel serve [--host HOST] [--port PORT] [--data-dir DIR] [--config FILE]
  keel token create --url URL --user EMAIL [--description TEXT] [--expires-in DURATION]
  keel lab generate --vms N [--hosts H] [--data-dir DIR] [--seed N]
  keel lab xapi [--host H] [--port P] [--data-dir DIR] [--password PW] [--step-delay MS] [--tls]
  keel lab xapi --replay FILE [--host H] [--port P] [--data-dir DIR] [--tls]
  keel watch <collection> --url URL [--filter F] [--fields a,b] [--json]
  keel vdi export <id> -o FILE [--format vhd|raw] [--concurrency N] [--base SNAPSHOT] [--snapshot] [--resume]
  keel vdi import FILE (--sr SR [--name-label L] [--name-description D] | --into VDI) [--format vhd|raw]
  keel vm export <id> -o FILE [--compress zstd|gzip]
  keel vm import FILE --pool POOL [--sr SR]
  keel backup run <job id>
  keel backup restore <archive id> --sr SR

Environment: KEEL_ADMIN_EMAIL, KEEL_ADMIN_PASSWORD (first start), KEEL_PASSWORD (token create), KEEL_TOKEN (watch),
KEEL_XAPI_PASSWORD (lab xapi), KEEL_XAPI_RECORD (serve: record the XAPI connections in this folder).
vdi, vm and backup take --url/--token or KEEL_URL/KEEL_TOKEN.`

/** How long a fatal error waits for its log lines to be written before the process ends. */
const FATAL_LOG_WAIT = 5000

async function serve(args: string[]): Promise<void> {
  const { values } = parseCommand({
    args,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string', default: './data' },
      config: { type: 'string' },
    },
    strict: true,
  })
  const http: { host?: string; port?: number } = {}
  if (values.host !== undefined) http.host = values.host
  if (values.port !== undefined) {
    const port = Number(values.port)
    if (!/^\d+$/.test(values.port) || port > 65535) throw new ConfigError('--port', `expected 0 to 65535, got ${values.port}`)
    http.port = port
  }
  // Record mode (docs/xapi.md): the environment names the folder as the configuration's `[driver] record` would.
  const record = process.env['KEEL_XAPI_RECORD']
  const config = loadConfig(values.config, { http, ...(record === undefined || record === '' ? {} : { driver: { record: resolve(record) } }) })
  const app = await createApp({
    dataDir: resolve(values['data-dir']),
    config,
    ...(process.env['KEEL_ADMIN_EMAIL'] ? { adminEmail: process.env['KEEL_ADMIN_EMAIL'] } : {}),
    ...(process.env['KEEL_ADMIN_PASSWORD'] ? { adminPassword: process.env['KEEL_ADMIN_PASSWORD'] } : {}),
  })
  const url = await app.listen(config.http.port, config.http.host)
  process.stdout.write(`keel listening on ${url}\n`)
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    app.log.info({ signal }, 'shutting down')
    app.close().then(
      () => {
        process.exitCode = 0
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed')
        process.exitCode = 1
      },
    )
  }
  process.once('SIGINT', () => stop('SIGINT'))
  process.once('SIGTERM', () => stop('SIGTERM'))
  // A bug that escapes every handler ends the process, but not before its log lines are out, unless
  // stderr's reader has stalled: then the process ends all the same once FATAL_LOG_WAIT has passed.
  const fatal = (error: unknown): void => {
    app.log.fatal({ err: error }, 'fatal error')
    setTimeout(() => process.exit(1), FATAL_LOG_WAIT)
    void app.flushLog().then(() => process.exit(1))
  }
  process.once('uncaughtException', fatal)
  process.once('unhandledRejection', fatal)
}

async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv
  if (command === 'serve') return serve(argv.slice(1))
  if (command === 'token' && sub === 'create') return createToken(rest)
  if (command === 'lab' && sub === 'generate') return generateLab(rest)
  if (command === 'lab' && sub === 'xapi') return serveXapi(rest)
  if (command === 'watch') return watch(argv.slice(1))
  if (command === 'vdi') return vdi(argv.slice(1))
  if (command === 'vm') return vm(argv.slice(1))
  if (command === 'backup') return backup(argv.slice(1))
  if (command === undefined || command === '--help' || command === 'help') {
    process.stdout.write(usage + '\n')
    return
  }
  throw new CliError(`unknown command: ${argv.join(' ')}\n${usage}`, 2)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof CliError) {
    process.stderr.write(`keel: ${error.message}\n`)
    process.exit(error.exitCode)
  }
  if (error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`keel: ${(error as Error).message}\n`)
    process.exit(2)
  }
  process.stderr.write(`keel: ${(error as Error).stack ?? String(error)}\n`)
  process.exit(1)
})
