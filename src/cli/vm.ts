import { CliError } from './errors.js'
import { download, endpointOf, upload } from './transfer.js'
import { createdId } from './vdi.js'
import { connection, parseCommand } from './args.js'

async function exportVm(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({
    args,
    options: { ...connection, output: { type: 'string', short: 'o' }, compress: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  })
  const [id] = positionals
  if (id === undefined || positionals.length > 1 || values.output === undefined) throw new CliError('vm export needs one VM id and -o FILE', 2)
  if (values.compress !== undefined && values.compress !== 'zstd' && values.compress !== 'gzip') {
    throw new CliError(`--compress must be zstd or gzip, got ${values.compress}`, 2)
  }
  const query = values.compress === undefined ? '' : `?${new URLSearchParams({ compress: values.compress })}`
  await download(endpointOf(values, 'vm export'), `/rest/v0/vms/${encodeURIComponent(id)}.xva${query}`, values.output, `export of ${id}`)
}

async function importVm(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({
    args,
    options: { ...connection, pool: { type: 'string' }, sr: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  })
  const [file] = positionals
  if (file === undefined || positionals.length > 1 || values.pool === undefined) throw new CliError('vm import needs one FILE and --pool', 2)
  const query = values.sr === undefined ? '' : `?${new URLSearchParams({ sr: values.sr })}`
  const what = `import into pool ${values.pool}`
  const body = await upload(endpointOf(values, 'vm import'), 'POST', `/rest/v0/pools/${encodeURIComponent(values.pool)}/vms${query}`, file, 201, what)
  process.stdout.write(createdId(body, what) + '\n')
}

/** `keel vm export|import`: a VM as an XVA file. */
export async function vm(args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action === 'export') return exportVm(rest)
  if (action === 'import') return importVm(rest)
  throw new CliError(`unknown vm command: ${action ?? '(none)'}; expected export or import`, 2)
}
