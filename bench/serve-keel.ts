// Child process for the benchmark: Keel on a prepared data directory, port chosen by the OS, logging
// one line per request as it does in service (the benchmark sends stderr to /dev/null).
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { generateLabSpec } from '../src/driver/lab/generate.js'

const [dataDir, vms, hosts] = process.argv.slice(2)
if (dataDir === undefined) throw new Error('usage: serve-keel DATA_DIR [VMS HOSTS]')
const app = await createApp({
  dataDir,
  config: loadConfig(),
  adminPassword: 'bench-password',
  labSpec: generateLabSpec({ vms: Number(vms ?? 10000), hosts: Number(hosts ?? 50) }),
})
const url = await app.listen(0, '127.0.0.1')
process.stdout.write(url + '\n')
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
