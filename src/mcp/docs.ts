import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { docsDir } from '../paths.js'

/**
 * Keel's own documentation, bundled with the package: one Markdown page per
 * topic in docs/<topic>.md. The topic names are the reference bridge's, so
 * assistants configured for it ask for the same ones; no network is needed.
 */
export const DOC_TOPICS = [
  'installation',
  'configuration',
  'backups',
  'restapi',
  'manage',
  'users',
  'architecture',
  'troubleshooting',
  'releases',
] as const

export type DocTopic = (typeof DOC_TOPICS)[number]

export const DOC_TOPIC_SUMMARIES: Readonly<Record<DocTopic, string>> = {
  installation: 'requirements, installing from a checkout, first start, running as a service',
  configuration: 'the TOML file, command-line flags, environment variables, data directory',
  backups: 'disk and VM export and import over the REST API; what is not available yet',
  restapi: 'conventions of /rest/v0: listings, fields, filter syntax, NDJSON, errors, reference',
  manage: 'day-to-day management: reading pools, hosts, VMs, storage and networks, the pool dashboard, alarms',
  users: 'users, groups, authentication tokens and access control',
  architecture: 'how Keel is built: HTTP layer, drivers, store, events, the assistant bridge',
  troubleshooting: 'common failures and what to do about them, including the assistant bridge',
  releases: 'versions, compatibility promises and what each release contains',
}

export function readDocPage(topic: DocTopic): Promise<string> {
  return readFile(join(docsDir, `${topic}.md`), 'utf8')
}
