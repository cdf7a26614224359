import { CliError } from './errors.js'
import { Progress } from './progress.js'
import { endpointOf, requestJson, type Endpoint } from './transfer.js'
import { connection, parseCommand } from './args.js'

interface TaskRecord {
  status: string
  result?: { id?: unknown; message?: unknown; code?: unknown }
  properties: { bytes?: { done: number; total?: number } }
}

const POLL_MS = 1000

function taskIdOf(body: unknown, what: string): string {
  const id = (body as { taskId?: unknown } | undefined)?.taskId
  if (typeof id !== 'string') throw new CliError(`${what}: the server answered without a task id`)
  return id
}

/** Follows a task until it ends, drawing its byte progress on a terminal; returns it once it succeeded. */
async function follow(endpoint: Endpoint, taskId: string, what: string): Promise<TaskRecord> {
  let progress: Progress | undefined
  let shown = 0
  try {
    for (;;) {
      const task = (await requestJson(endpoint, 'GET', `/rest/v0/tasks/${encodeURIComponent(taskId)}?wait=true&timeout=${POLL_MS}`, 200, what)) as TaskRecord
      const bytes = task.properties.bytes
      if (bytes !== undefined) {
        progress ??= new Progress(bytes.total)
        progress.add(bytes.done - shown)
        shown = bytes.done
      }
      if (task.status === 'success') return task
      if (task.status !== 'pending') {
        const reason = task.result?.message
        throw new CliError(`${what} ended ${task.status}${typeof reason === 'string' ? `: ${reason}` : ''}`)
      }
    }
  } finally {
    progress?.finish()
  }
}

async function runJob(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({ args, options: connection, allowPositionals: true, strict: true })
  const [id] = positionals
  if (id === undefined || positionals.length > 1) throw new CliError('backup run needs one backup job id', 2)
  const endpoint = endpointOf(values, 'backup run')
  const what = `backup job ${id}`
  const started = await requestJson(endpoint, 'POST', `/rest/v0/backup-jobs/${encodeURIComponent(id)}/actions/run`, 202, what)
  await follow(endpoint, taskIdOf(started, what), what)
}

async function restoreArchive(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand({ args, options: { ...connection, sr: { type: 'string' } }, allowPositionals: true, strict: true })
  const [id] = positionals
  if (id === undefined || positionals.length > 1 || values.sr === undefined) throw new CliError('backup restore needs one archive id and --sr', 2)
  const endpoint = endpointOf(values, 'backup restore')
  const what = `restore of ${id}`
  const started = await requestJson(endpoint, 'POST', `/rest/v0/backup-archives/${encodeURIComponent(id)}/actions/restore`, 202, what, { sr: values.sr })
  const task = await follow(endpoint, taskIdOf(started, what), what)
  const vm = task.result?.id
  if (typeof vm !== 'string') throw new CliError(`${what}: the task ended without the new VM's id`)
  process.stdout.write(`${vm}\n`)
}

/** `keel backup run|restore`: a backup job now, an archive back into a VM; both followed to their end. */
export async function backup(args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action === 'run') return runJob(rest)
  if (action === 'restore') return restoreArchive(rest)
  throw new CliError(`unknown backup command: ${action ?? '(none)'}; expected run or restore`, 2)
}
