// Child process for the XAPI driver benchmark: Keel on the XAPI driver, with a data directory of its
// own (users and tokens only), connected once listening to the simulator at SIMULATOR_URL. Prints
// `URL CONNECT_MS`: the ms from the login to the pool's index ready (every record fetched and mapped).
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'

const [dataDir, simulatorUrl, password] = process.argv.slice(2)
if (dataDir === undefined || simulatorUrl === undefined || password === undefined) throw new Error('usage: serve-keel-xapi DATA_DIR SIMULATOR_URL PASSWORD')
const app = await createApp({
  dataDir,
  config: loadConfig(undefined, { driver: { kind: 'xapi' } }),
  adminPassword: 'bench-password',
  xapi: { allowHttp: true },
})
if (app.xapi === undefined) throw new Error('Keel did not start on the XAPI driver')
const url = await app.listen(0, '127.0.0.1')
const started = performance.now()
await app.xapi.connect({ host: simulatorUrl, username: 'root', password, allowUnauthorized: false, readOnly: false }, new AbortController().signal)
process.stdout.write(`${url} ${(performance.now() - started).toFixed(0)}\n`)
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
