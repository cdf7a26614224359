import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root, found by walking up from this module (works from src/ and dist/src/). */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

export const packageRoot = findRoot()
export const fixturesDir = join(packageRoot, 'fixtures')
export const docsDir = join(packageRoot, 'docs')
