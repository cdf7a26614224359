// Child process for the XAPI benchmark: the simulator on a data directory Keel has made, driven over
// stdin. `apply N` renames the first N VMs of the lab once each, through the lab as Keel would, so
// that event.from has N changes to deliver; it answers `applied SECONDS` when the lab has made them.
import { createInterface } from 'node:readline'
import { openSimulator } from '../src/simulator/simulator.js'

const [dataDir, password] = process.argv.slice(2)
if (dataDir === undefined || password === undefined) throw new Error('usage: serve-xapi DATA_DIR PASSWORD')
const simulator = await openSimulator({ dataDir, password, stepDelay: 0 })
const url = await simulator.listen(0, '127.0.0.1')
const { driver } = simulator.services

async function apply(count: number): Promise<void> {
  const started = performance.now()
  const targets = [...driver.objectsOfType('VM')].slice(0, count)
  for (const [i, vm] of targets.entries()) {
    await driver.update(vm, { nameLabel: `renamed ${i}` })
    // Lets the event loop answer event.from between changes, as a lab with work in flight would.
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve))
  }
  process.stdout.write(`applied ${((performance.now() - started) / 1000).toFixed(3)}\n`)
}

process.stdout.write(url + '\n')
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, argument] = line.split(' ')
  if (command === 'apply') void apply(Number(argument))
})
process.on('SIGTERM', () => void simulator.close().then(() => process.exit(0)))
