import { mkdirSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './disks.js'

export interface RootLayout {
  /** the temporary folder holding the others, links resolved */
  readonly base: string
  /** a repository root, holding `real/`, `alias` (a link to `real`), `escape` (a link to `outside`) and `dangling` (a link to nothing) */
  readonly root: string
  /** a folder beside the root, which no repository may reach */
  readonly outside: string
}

/** A repository root with links in it pointing inside, outside and nowhere; removed when the test ends. */
export function rootLayout(t: { teardown: (fn: () => void) => void }): RootLayout {
  const folder = tempDir()
  t.teardown(folder.cleanup)
  const base = realpathSync(folder.path)
  const root = join(base, 'root')
  const outside = join(base, 'outside')
  mkdirSync(join(root, 'real'), { recursive: true })
  mkdirSync(outside)
  symlinkSync(outside, join(root, 'escape'))
  symlinkSync(join(root, 'real'), join(root, 'alias'))
  symlinkSync(join(base, 'nowhere'), join(root, 'dangling'))
  return { base, root, outside }
}
