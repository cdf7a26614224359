import { extname } from 'node:path'
import { CliError } from './errors.js'
import { download, endpointOf, resumeDownload, upload } from './transfer.js'
import { connection, parseCommand } from './args.js'

type Format = 'vhd' | 'raw'

const extensions: Record<string, Format> = { '.vhd': 'vhd', '.raw': 'raw', '.img': 'raw' }

/** `--format` if given, else the file's extension. */
function formatOf(explicit: string | undefined, file: string): Format {
  if (explicit === 'vhd' || explicit === 'raw') return explicit
  if (explicit !== undefined) throw new CliError(`--format must be vhd or raw, got ${explicit}`, 2)
  const format = extensions[extname(file).toLowerCase()]
  if (format === undefined) throw new CliError(`cannot tell the format of ${file} from its extension: give --format vhd|raw`, 2)
  return format
}

/** The id of a 201 answer's JSON body. */
export function createdId(body: Buffer, what: string): string {
  try {
    const { id } = JSON.parse(body.toString('utf8')) as { id?: unknown }
    if (typeof id === 'string') return id
  } catch {
    // reported below with the rest of the malformed answers
  }
  throw new CliError(`${what}: the server answered without an id`)
}

async function exportVdi(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({
    args,
    options: {
      ...connection,
      format: { type: 'string' },
      output: { type: 'string', short: 'o' },
      concurrency: { type: 'string' },
      base: { type: 'string' },
      snapshot: { type: 'boolean', default: false },
      resume: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  })
  const [id] = positionals
  if (id === undefined || positionals.length > 1 || values.output === undefined) throw new CliError('vdi export needs one VDI id and -o FILE', 2)
  const format = formatOf(values.format, values.output)
  if (values.resume && format !== 'raw') throw new CliError('--resume works with raw exports only', 2)
  const query = new URLSearchParams()
  if (values.concurrency !== undefined) {
    if (!/^[1-9]\d*$/.test(values.concurrency)) throw new CliError(`--concurrency must be a positive integer, got ${values.concurrency}`, 2)
    query.set('nbdConcurrency', values.concurrency)
  }
  if (values.base !== undefined) query.set('base', values.base)
  const collection = values.snapshot ? 'vdi-snapshots' : 'vdis'
  const path = `/rest/v0/${collection}/${encodeURIComponent(id)}.${format}${query.size > 0 ? `?${query}` : ''}`
  const endpoint = endpointOf(values, 'vdi export')
  const what = `export of ${id}`
  if (values.resume) await resumeDownload(endpoint, path, values.output, what)
  else await download(endpoint, path, values.output, what)
}

async function importVdi(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({
    args,
    options: {
      ...connection,
      format: { type: 'string' },
      sr: { type: 'string' },
      into: { type: 'string' },
      'name-label': { type: 'string' },
      'name-description': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  })
  const [file] = positionals
  if (file === undefined || positionals.length > 1) throw new CliError('vdi import needs one FILE', 2)
  if ((values.sr === undefined) === (values.into === undefined)) throw new CliError('vdi import needs either --sr or --into', 2)
  const format = formatOf(values.format, file)
  const endpoint = endpointOf(values, 'vdi import')
  if (values.into !== undefined) {
    if (values['name-label'] !== undefined || values['name-description'] !== undefined) throw new CliError('--name-label and --name-description go with --sr', 2)
    await upload(endpoint, 'PUT', `/rest/v0/vdis/${encodeURIComponent(values.into)}.${format}`, file, 204, `import into ${values.into}`)
    return
  }
  const query = new URLSearchParams()
  if (values['name-label'] !== undefined) query.set('name_label', values['name-label'])
  if (values['name-description'] !== undefined) query.set('name_description', values['name-description'])
  if (format === 'raw') query.set('raw', 'true')
  const sr = values.sr as string
  const what = `import into SR ${sr}`
  const body = await upload(endpoint, 'POST', `/rest/v0/srs/${encodeURIComponent(sr)}/vdis${query.size > 0 ? `?${query}` : ''}`, file, 201, what)
  process.stdout.write(createdId(body, what) + '\n')
}

/** `keel vdi export|import`: a disk's content to and from a local file. */
export async function vdi(args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action === 'export') return exportVdi(rest)
  if (action === 'import') return importVdi(rest)
  throw new CliError(`unknown vdi command: ${action ?? '(none)'}; expected export or import`, 2)
}
