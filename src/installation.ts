import { randomUUID } from 'node:crypto'
import { existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isUuid } from './uuid.js'

/**
 * The `other_config` key that marks an object this installation created, its
 * value the installation id. Start-up sweeps touch only objects carrying
 * their own installation's mark: a pool may be shared with the reference,
 * which names its backup snapshots as Keel does, and with other Keels.
 */
export const INSTALLATION_MARK = 'keel:installation'

const INSTALLATION_FILE = 'installation-id'

/**
 * This installation's id: a UUID made at the first start and kept in the data
 * directory beside `client-token.key`, not in the database, so that Keels
 * sharing one database (replicas) each keep their own and sweep only their
 * own work. A file that is not one UUID stops the start: making a new id
 * would leave everything the old one marked to nobody.
 */
export function loadInstallationId(dataDir: string): string {
  const file = join(dataDir, INSTALLATION_FILE)
  // Written aside, then linked in place: the file appears whole or not at all, and never replaces one.
  if (!existsSync(file)) {
    const draft = join(dataDir, `.${INSTALLATION_FILE}.${process.pid}`)
    writeFileSync(draft, `${randomUUID()}\n`, { mode: 0o600, flush: true })
    try {
      linkSync(draft, file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    } finally {
      rmSync(draft, { force: true })
    }
  }
  const id = readFileSync(file, 'utf8').trim()
  if (!isUuid(id)) throw new Error(`${file} does not hold an installation id (one lower-case UUID); restore it from a backup of the data directory`)
  return id
}
