import { lstat, realpath } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { invalidParameters, KeelError } from '../errors.js'

/**
 * The folder of a `file:///absolute/path` repository URL (its query, such as
 * the reference's options, is ignored). The URL parser already folds `..`,
 * `%2e%2e` and `.%2e` segments; an encoded `/` is refused by `fileURLToPath`.
 */
export function repositoryPath(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidParameters([{ path: 'body.url', message: 'must be a URL such as file:///var/backups' }])
  }
  if (parsed.protocol !== 'file:' || parsed.host !== '') {
    throw invalidParameters([{ path: 'body.url', message: `${parsed.protocol}// repositories are not supported; use file:///absolute/path` }])
  }
  let path: string
  try {
    path = resolve(fileURLToPath(`file://${parsed.pathname}`))
  } catch {
    throw invalidParameters([{ path: 'body.url', message: 'must not encode a path separator' }])
  }
  if (path.includes('\0')) throw invalidParameters([{ path: 'body.url', message: 'must not hold a NUL character' }])
  return path
}

/**
 * Where `path` really is: its longest existing prefix through every symbolic
 * link, then the rest, which does not exist yet and so cannot be a link.
 * Undefined when that cannot be told: a dangling link (a later mkdir would
 * follow it), a loop, a folder Keel may not search. Below a file nothing can
 * be made, so a path there resolves and is left to fail as not a folder.
 */
async function realLocation(path: string): Promise<string | undefined> {
  const missing: string[] = []
  for (let prefix = path; ; ) {
    try {
      return join(await realpath(prefix), ...missing)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || dirname(prefix) === prefix) return undefined
      // There now: made meanwhile (a job's other VM creating the folders both write under), which resolves now, or a dangling link, which does not.
      if (await lstat(prefix).then(() => true, () => false)) return realpath(prefix).then((real) => join(real, ...missing), () => undefined)
      missing.unshift(basename(prefix))
      prefix = dirname(prefix)
    }
  }
}

/** Whether `path` is `root` or below it; both already resolved. */
export const isWithin = (root: string, path: string): boolean => {
  const rest = relative(root, path)
  return rest === '' || (rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest))
}

export const outsideRoots = (url: string, roots: number): KeelError =>
  new KeelError('REPOSITORY_OUTSIDE_ROOTS', `the backup repository ${url} is not inside the folders backup repositories may use`, { url, rootCount: roots })

/**
 * The real location of `path` (a repository, or a folder or file in it),
 * refused unless it is one of `roots` or inside one, both sides resolved
 * through symbolic links now. `url` is what the refusal names.
 */
export async function confinePath(path: string, roots: readonly string[], url: string): Promise<string> {
  const real = await realLocation(path)
  if (real !== undefined) {
    for (const root of roots) {
      const realRoot = await realLocation(root)
      if (realRoot !== undefined && isWithin(realRoot, real)) return real
    }
  }
  throw outsideRoots(url, roots.length)
}

/** The real folder of a repository URL, refused unless inside one of `roots`. */
export function confineRepository(url: string, roots: readonly string[]): Promise<string> {
  return confinePath(repositoryPath(url), roots, url)
}
