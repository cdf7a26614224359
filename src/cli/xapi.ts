import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { openReplay, RecordingError } from '../simulator/replay.js'
import { openSimulator } from '../simulator/simulator.js'
import { parseCommand } from './args.js'
import { CliError } from './errors.js'

/** `keel lab xapi`: serves the lab of a data directory as a XAPI pool (docs/xapi-simulator.md), or a recording with `--replay` (docs/xapi.md). */
export async function serveXapi(args: string[]): Promise<void> {
  const { values } = parseCommand({
    args,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '8443' },
      'data-dir': { type: 'string', default: './data' },
      password: { type: 'string' },
      'step-delay': { type: 'string' },
      tls: { type: 'boolean', default: false },
      replay: { type: 'string' },
    },
    strict: true,
  })
  const port = Number(values.port)
  if (!/^\d+$/.test(values.port) || port > 65535) throw new CliError(`--port expects 0 to 65535, got ${values.port}`, 2)
  const names = [...new Set([values.host, '127.0.0.1', 'localhost'])]
  if (values.replay !== undefined) {
    if (values.password !== undefined || values['step-delay'] !== undefined) throw new CliError('--replay takes no --password (any is accepted) nor --step-delay', 2)
    const replay = await openReplay({ file: resolve(values.replay), ...(values.tls ? { tls: { dataDir: resolve(values['data-dir']), names } } : {}) }).catch((error: unknown) => {
      throw error instanceof RecordingError || (error as NodeJS.ErrnoException).code === 'ENOENT' ? new CliError((error as Error).message, 1) : error
    })
    const url = await replay.listen(port, values.host)
    process.stderr.write(`keel lab xapi: replaying ${values.replay}\n`)
    process.stdout.write(`keel lab xapi listening on ${url}\n`)
    stopOn(() => replay.close())
    return
  }
  const stepDelay = values['step-delay'] === undefined ? undefined : Number(values['step-delay'])
  if (stepDelay !== undefined && !(Number.isInteger(stepDelay) && stepDelay >= 0)) throw new CliError('--step-delay expects a whole number of ms', 2)
  let password = values.password ?? process.env['KEEL_XAPI_PASSWORD']
  if (password === undefined || password === '') {
    password = randomBytes(12).toString('base64url')
    process.stderr.write(`keel lab xapi: generated password for root: ${password}\n`)
  }
  const simulator = await openSimulator({
    dataDir: resolve(values['data-dir']),
    password,
    ...(stepDelay === undefined ? {} : { stepDelay }),
    ...(values.tls ? { tls: { names } } : {}),
  })
  const url = await simulator.listen(port, values.host)
  process.stdout.write(`keel lab xapi listening on ${url}\n`)
  stopOn(() => simulator.close())
}

function stopOn(close: () => Promise<void>): void {
  const stop = (): void => {
    close().then(
      () => (process.exitCode = 0),
      (error: unknown) => {
        process.stderr.write(`keel lab xapi: ${(error as Error).message}\n`)
        process.exitCode = 1
      },
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
