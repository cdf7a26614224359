// Child process for the benchmark: Keel on a prepared data directory, port chosen by the OS, logging
// one line per request as it does in service (the benchmark sends stderr to /dev/null). STEP_DELAY_MS
// overrides the lab's simulated step time (the disk benchmark sets 0 so an action's time is Keel's work).
// BENCH_LOG_LEVEL sets the log's level (the soak keeps warnings and errors only, and their text).
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { generateLabSpec } from '../src/driver/lab/generate.js'

const [dataDir, vms, hosts, stepDelay] = process.argv.slice(2)
if (dataDir === undefined) throw new Error('usage: serve-keel DATA_DIR [VMS HOSTS [STEP_DELAY_MS]]')
const app = await createApp({
  dataDir,
  config: loadConfig(undefined, {
    ...(stepDelay === undefined ? {} : { lab: { stepDelay: Number(stepDelay) } }),
    ...(process.env['BENCH_LOG_LEVEL'] === undefined ? {} : { log: { level: process.env['BENCH_LOG_LEVEL'] } }),
  }),
  adminPassword: 'bench-password',
  labSpec: generateLabSpec({ vms: Number(vms ?? 10000), hosts: Number(hosts ?? 50) }),
})
const url = await app.listen(0, '127.0.0.1')
process.stdout.write(url + '\n')
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
