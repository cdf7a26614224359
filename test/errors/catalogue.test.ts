import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { errorStatus } from '../../src/error-codes.js'
import { packageRoot } from '../../src/paths.js'

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sourceFiles(path)
    else if (entry.name.endsWith('.ts')) yield path
  }
}

/** Codes the sources send: KeelError constructions (direct or through a subclass's super), literal body codes, and exported code constants (`export const CODE = 'CODE'`). */
function raisedCodes(): Map<string, string[]> {
  const raised = new Map<string, string[]>()
  const pattern = /(?:new KeelError|super)\(\s*'([A-Z][A-Z_]+)'|\bcode: '([A-Z][A-Z_]+)'|\bexport const ([A-Z][A-Z_]+) = '\3'/g
  for (const file of sourceFiles(join(packageRoot, 'src'))) {
    if (file.endsWith('error-codes.ts')) continue
    for (const match of readFileSync(file, 'utf8').matchAll(pattern)) {
      const code = (match[1] ?? match[2] ?? match[3]) as string
      raised.set(code, [...(raised.get(code) ?? []), relative(packageRoot, file)])
    }
  }
  return raised
}

/** README's error table: `| status | `CODE` (...), `CODE` |` rows. */
function readmeCodes(): Map<string, number> {
  const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Errors'))
  const codes = new Map<string, number>()
  for (const row of section.matchAll(/^\| (\d{3}) \| (.+) \|$/gm)) {
    for (const code of (row[2] as string).matchAll(/`([A-Z][A-Z_]+)`/g)) codes.set(code[1] as string, Number(row[1]))
  }
  return codes
}

const table: ReadonlyMap<string, number> = new Map(Object.entries(errorStatus))

t.test('every code in the table is raised somewhere, and every raised code is in the table', async (t) => {
  const raised = raisedCodes()
  t.ok(raised.size > 10, 'the scan finds the raised codes')
  for (const code of table.keys()) t.ok(raised.has(code), `${code} is raised`)
  for (const [code, files] of raised) t.ok(table.has(code), `${code} (raised in ${files.join(', ')}) is in the table`)
})

t.test('README lists exactly the table, each code under its status', async (t) => {
  const readme = readmeCodes()
  t.ok(readme.size > 10, 'the README table is found')
  for (const [code, status] of table) t.equal(readme.get(code), status, `README lists ${code} as ${status}`)
  for (const code of readme.keys()) t.ok(table.has(code), `README's ${code} is in the table`)
})

t.test('codes are stable upper-case names with client or server statuses', async (t) => {
  for (const [code, status] of table) {
    t.match(code, /^[A-Z][A-Z_]+$/)
    t.ok(status >= 400 && status < 600, code)
  }
})
