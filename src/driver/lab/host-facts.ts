import type { HostFacts, HostLogFile, MissingPatch } from '../types.js'
import type { Driver, XoRecord } from '../types.js'

/**
 * The lab's updates, by product and version: a small catalogue that does not
 * change, so that every lab host of that release lacks the same three.
 */
const CATALOGUE: Readonly<Record<string, readonly MissingPatch[]>> = {
  'XCP-ng 8.3.0': [
    {
      name: 'xapi-core',
      version: '25.6.0',
      release: '1.12.xcpng8.3',
      description: 'Xen toolstack for XCP',
      url: 'http://www.xen.org',
      license: 'LGPL+linking exception',
      size: 8_874_268,
      changelog: { date: 1_761_912_000, description: '- Fix a race when a VM is migrated during a snapshot', author: 'Lab Maintainers <lab@keel.example> - 25.6.0-1.12' },
    },
    {
      name: 'xen-hypervisor',
      version: '4.17.5',
      release: '15.xcpng8.3',
      description: 'The Xen Hypervisor',
      url: 'https://xenproject.org/',
      license: 'GPLv2',
      size: 2_491_012,
      changelog: { date: 1_762_516_800, description: '- Security update for XSA-475', author: 'Lab Maintainers <lab@keel.example> - 4.17.5-15' },
    },
    {
      name: 'openssh',
      version: '9.8p1',
      release: '1.2.3.xcpng8.3',
      description: 'An open source implementation of SSH protocol version 2',
      url: 'https://www.openssh.com/portable.html',
      license: 'BSD',
      size: 429_044,
      changelog: { date: 1_763_121_600, description: '- Fix CVE-2025-26465', author: 'Lab Maintainers <lab@keel.example> - 9.8p1-1.2.3' },
    },
  ],
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '')

/** The catalogue's patches of the host's release that it has not installed (its `patches` names the installed ones). */
export function labMissingPatches(host: Readonly<Record<string, unknown>>): readonly MissingPatch[] {
  const installed = new Set(Array.isArray(host['patches']) ? host['patches'] : [])
  const available = CATALOGUE[`${str(host['productBrand'])} ${str(host['version'])}`] ?? []
  return available.filter((patch) => !installed.has(patch.name))
}
const seconds = (value: unknown): number => (typeof value === 'number' ? value : 0)
const iso = (time: number): string => new Date(time * 1000).toISOString()

/** The lab's events about a host, oldest first: its boot, its toolstack's start, the messages about it and what runs on it. */
function events(driver: Pick<Driver, 'objectsOfType'>, host: XoRecord): Array<[time: number, line: string]> {
  const name = str(host['hostname']) || str(host['name_label'])
  const lines: Array<[number, string]> = [
    [seconds(host['startTime']), `${name} kernel: Linux version 4.19.0+1 (${str(host['productBrand'])} ${str(host['version'])}) booted`],
    [seconds(host['agentStartTime']), `${name} xapi: [ info|${name}|0 |bringup|] Toolstack started (build ${str(host['build'])})`],
  ]
  const resident = new Set([host.id, ...(Array.isArray(host['residentVms']) ? host['residentVms'] : [])])
  for (const message of driver.objectsOfType('message')) {
    if (!resident.has(message['$object'])) continue
    lines.push([seconds(message['time']), `${name} xapi: [ info|${name}|message] ${str(message['name'])} on ${str(message['$object'])}`])
  }
  return lines.sort((a, b) => a[0] - b[0])
}

export class LabHostFacts implements HostFacts {
  readonly #driver: Pick<Driver, 'objectsOfType'>

  constructor(driver: Pick<Driver, 'objectsOfType'>) {
    this.#driver = driver
  }

  async missingPatches(host: XoRecord): Promise<readonly MissingPatch[]> {
    return labMissingPatches(host)
  }

  async smtEnabled(host: XoRecord): Promise<boolean> {
    return Number((host['CPUs'] as Record<string, unknown> | undefined)?.['threads_per_core']) > 1
  }

  async auditLog(host: XoRecord): Promise<string> {
    const name = str(host['hostname']) || str(host['name_label'])
    return events(this.#driver, host)
      .map(([time, line]) => `${iso(time)} ${name} xapi: [audit] ('LOCAL_SUPERUSER' 'root' 'ALLOWED' 'OK' 'API' ${JSON.stringify(line.slice(name.length + 1))})\n`)
      .join('')
  }

  async logFiles(host: XoRecord): Promise<readonly HostLogFile[]> {
    const lines = events(this.#driver, host)
    const last = lines.at(-1)?.[0] ?? 0
    const text = (filter: (line: string) => boolean): string =>
      lines
        .filter(([, line]) => filter(line))
        .map(([time, line]) => `${iso(time)} ${line}\n`)
        .join('')
    return [
      { name: 'xensource.log', text: text((line) => line.includes(' xapi: ')), mtime: last },
      { name: 'kern.log', text: text((line) => line.includes(' kernel: ')), mtime: last },
    ]
  }
}
