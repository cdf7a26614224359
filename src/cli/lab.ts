import { resolve } from 'node:path'
import { pino } from 'pino'
import { ensureAdministrator } from '../app.js'
import { Directory } from '../auth/users.js'
import { expandLab } from '../driver/lab/expand.js'
import { writeLab } from '../driver/lab/driver.js'
import { generateLabSpec } from '../driver/lab/generate.js'
import { EventBus } from '../events/bus.js'
import { openDatabase } from '../store/database.js'
import { CliError } from './errors.js'
import { parseCommand } from './args.js'

function count(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value)) throw new CliError(`${flag} expects a whole number, got ${value}`, 2)
  return Number(value)
}

/** `keel lab generate`: replaces the lab of a data directory with a generated one of any size. */
export async function generateLab(args: string[]): Promise<void> {
  const { values } = parseCommand({
    args,
    options: {
      vms: { type: 'string' },
      hosts: { type: 'string' },
      seed: { type: 'string' },
      'data-dir': { type: 'string', default: './data' },
    },
    strict: true,
  })
  const vms = count('--vms', values.vms, Number.NaN)
  if (Number.isNaN(vms)) throw new CliError('lab generate needs --vms N', 2)
  const hosts = count('--hosts', values.hosts, Math.max(3, Math.ceil(vms / 200)))
  if (hosts < 1) throw new CliError('--hosts must be at least 1', 2)
  const seed = values.seed === undefined ? undefined : count('--seed', values.seed, 0)

  const started = Date.now()
  const db = openDatabase(resolve(values['data-dir']))
  try {
    const log = pino({ level: 'warn' }, pino.destination(2))
    const directory = new Directory(db, new EventBus(), Date.now)
    const creatorId = await ensureAdministrator(
      directory,
      {
        ...(process.env['KEEL_ADMIN_EMAIL'] ? { adminEmail: process.env['KEEL_ADMIN_EMAIL'] } : {}),
        ...(process.env['KEEL_ADMIN_PASSWORD'] ? { adminPassword: process.env['KEEL_ADMIN_PASSWORD'] } : {}),
      },
      log,
    )
    const spec = generateLabSpec({ vms, hosts, ...(seed === undefined ? {} : { seed }) })
    const records = expandLab(spec, { creatorId, now: Date.now(), ...(seed === undefined ? {} : { seed }) })
    writeLab(db, records)
    process.stdout.write(`generated a lab of ${vms} VMs on ${hosts} hosts (${records.length} objects) in ${Date.now() - started} ms\n`)
  } finally {
    db.close()
  }
}
