// Child process for the event fan-out benchmark: Keel on a generated lab, driven over stdin.
// `rss` answers the resident set after a full GC; `apply N` renames VMs N times, each name
// carrying the time of the change so that clients can measure delivery latency.
import { createInterface } from 'node:readline'
import { pino } from 'pino'
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { generateLabSpec } from '../src/driver/lab/generate.js'

const [dataDir, vms] = process.argv.slice(2)
if (dataDir === undefined) throw new Error('usage: serve-events DATA_DIR [VMS]')
const app = await createApp({
  dataDir,
  config: loadConfig(),
  logger: pino({ level: 'silent' }),
  adminPassword: 'bench-password',
  labSpec: generateLabSpec({ vms: Number(vms ?? 1000), hosts: 5 }),
})
const url = await app.listen(0, '127.0.0.1')
const targets = [...app.driver.objectsOfType('VM')].map((vm) => vm.id)
const gc = (globalThis as { gc?: () => void }).gc

async function apply(count: number): Promise<void> {
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const vm = app.driver.getObject(targets[i % targets.length] as string)
    if (vm !== undefined) await app.driver.update(vm, { nameLabel: `t${(performance.timeOrigin + performance.now()).toFixed(3)}` })
    // Lets the event loop deliver between changes, as a lab with real work in flight would.
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve))
  }
  process.stdout.write(`applied ${((performance.now() - started) / 1000).toFixed(3)}\n`)
}

process.stdout.write(url + '\n')
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, argument] = line.split(' ')
  if (command === 'rss') {
    gc?.()
    gc?.()
    process.stdout.write(`rss ${process.memoryUsage().rss}\n`)
  } else if (command === 'cpu') {
    const usage = process.cpuUsage()
    process.stdout.write(`cpu ${usage.user + usage.system}\n`)
  } else if (command === 'apply') {
    void apply(Number(argument))
  }
})
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
