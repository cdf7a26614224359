import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../paths.js'
import { renderDatamodel } from './render.js'

/** `node dist/src/xapi/datamodel/generate.js [xenapi.json]`: rewrites src/xapi/datamodel/generated.ts. */
const source = process.argv[2] ?? join(packageRoot, '..', 'shared', 'xapi', 'xenapi.json')
const target = join(packageRoot, 'src', 'xapi', 'datamodel', 'generated.ts')
writeFileSync(target, renderDatamodel(JSON.parse(readFileSync(source, 'utf8')) as Parameters<typeof renderDatamodel>[0]))
process.stdout.write(`wrote ${target}\n`)
