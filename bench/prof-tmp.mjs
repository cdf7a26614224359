import { createApp } from '../dist/src/app.js'
import { loadConfig } from '../dist/src/config/config.js'
import { generateLabSpec } from '../dist/src/driver/lab/generate.js'
import { pino } from 'pino'
import { mkdtempSync } from 'node:fs'
const app = await createApp({ dataDir: mkdtempSync('/tmp/kp-'), config: loadConfig(), logger: pino({level:'info'}, pino.destination({dest: '/dev/null', sync: false})), adminPassword: 'x', labSpec: generateLabSpec({vms: 10000, hosts: 50}) })
const url = await app.listen(0, '127.0.0.1')
console.log(url)
setTimeout(() => app.close(), 22000)
