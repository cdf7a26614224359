import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../../src/cli/node-flags.js'
import { packageRoot } from '../../src/paths.js'

t.test('keel serve, npm start and the benchmarks run the service with the same V8 flags and environment', async (t) => {
  const flags = SERVICE_NODE_FLAGS.join(' ')
  const env = Object.entries(SERVICE_ENV).map(([name, value]) => `${name}=${value}`).join(' ')
  const shebang = readFileSync(join(packageRoot, 'src/cli/main.ts'), 'utf8').split('\n')[0]
  t.equal(shebang, `#!/usr/bin/env -S ${env} node ${flags}`, 'the bin runs node with them')
  const start = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start']
  t.match(start, `${env} node ${flags} dist/src/cli/main.js serve`, 'npm start passes them')
})
