import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { openSimulator } from '../simulator/simulator.js'
import { parseCommand } from './args.js'
import { CliError } from './errors.js'

/** `keel lab xapi`: serves the lab of a data directory as a XAPI pool (docs/xapi-simulator.md). */
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
    },
    strict: true,
  })
  const port = Number(values.port)
  if (!/^\d+$/.test(values.port) || port > 65535) throw new CliError(`--port expects 0 to 65535, got ${values.port}`, 2)
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
    ...(values.tls ? { tls: { names: [...new Set([values.host, '127.0.0.1', 'localhost'])] } } : {}),
  })
  const url = await simulator.listen(port, values.host)
  process.stdout.write(`keel lab xapi listening on ${url}\n`)
  const stop = (): void => {
    simulator.close().then(
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
