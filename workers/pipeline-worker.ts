import { parentPort, workerData } from 'node:worker_threads'
import type { Transform } from 'node:stream'
import { KeelError } from '../src/errors.js'
import { forTransfer, type FromWorker, type SerializedError, type ToWorker } from './messages.js'
import { pipelines } from './pipelines.js'
import { lowerThisThread, WORKER_NICENESS } from './thread-priority.js'
import { XvaJob } from './xva-job.js'

interface Running {
  readonly transform: Promise<Transform>
  /** output bytes posted and not yet acknowledged by the main side */
  unacked: number
}

const port = parentPort
if (port === null) throw new Error('pipeline-worker must run as a worker thread')
const windowBytes = (workerData as { windowBytes: number }).windowBytes
lowerThisThread(WORKER_NICENESS)
const streams = new Map<number, Running>()
const xvaJobs = new Map<number, XvaJob>()

const post = (message: FromWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer)

function serialize(error: unknown): SerializedError {
  if (error instanceof KeelError) return { message: error.message, code: error.code, ...(error.data === undefined ? {} : { data: error.data }) }
  const errno = (error as NodeJS.ErrnoException | undefined)?.code
  return { message: error instanceof Error ? error.message : String(error), ...(typeof errno === 'string' ? { errno } : {}) }
}

function fail(id: number, error: unknown): void {
  if (!streams.delete(id)) return
  post({ type: 'error', id, error: serialize(error) })
}

async function start(id: number, name: string): Promise<Transform> {
  const factory = pipelines[name]
  if (factory === undefined) throw new Error(`no pipeline named ${name}`)
  const transform = await factory()
  const running = streams.get(id)
  transform.on('data', (chunk: Buffer) => {
    if (running === undefined || !streams.has(id)) return
    const { chunk: moved, transfer } = forTransfer(chunk)
    // Read the length first: posting detaches the transferred buffer.
    const length = moved.byteLength
    post({ type: 'data', id, chunk: moved }, transfer)
    // Holding the readable side stalls the transform, which withholds write callbacks, which stops 'consumed': backpressure.
    running.unacked += length
    if (running.unacked >= windowBytes) transform.pause()
  })
  transform.once('end', () => {
    if (streams.delete(id)) post({ type: 'end', id })
  })
  transform.once('error', (error) => fail(id, error))
  return transform
}

function startXva(open: Extract<ToWorker, { type: 'xva-open' }>): void {
  const { id } = open
  const job = new XvaJob(open, post)
  xvaJobs.set(id, job)
  job.run().then(
    () => {
      if (xvaJobs.delete(id)) post({ type: 'end', id })
    },
    (error: unknown) => {
      if (xvaJobs.delete(id)) post({ type: 'error', id, error: serialize(error) })
    },
  )
}

/** Messages of XVA jobs; false for the others. */
function xvaMessage(message: ToWorker): boolean {
  switch (message.type) {
    case 'xva-open':
      startXva(message)
      return true
    case 'xva-block':
      xvaJobs.get(message.id)?.block(message.disk, message.index, message.slot)
      return true
    case 'xva-output-free':
      xvaJobs.get(message.id)?.outputFree(message.slot)
      return true
    case 'abort': {
      const job = xvaJobs.get(message.id)
      if (job === undefined) return false
      xvaJobs.delete(message.id)
      const { id } = message
      // The main thread keeps the job's memory and file until told they are no longer touched.
      void job.abort().then(() => post({ type: 'xva-stopped', id }))
      return true
    }
    default:
      return false
  }
}

port.on('message', (message: ToWorker) => {
  if (xvaMessage(message)) return
  const { id } = message
  if (message.type === 'open') {
    const running: Running = { transform: start(id, message.name), unacked: 0 }
    streams.set(id, running)
    running.transform.catch((error: unknown) => fail(id, error))
    return
  }
  const running = streams.get(id)
  if (running === undefined) return
  switch (message.type) {
    case 'data':
      void running.transform.then((transform) =>
        transform.write(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength), (error) => {
          if (error === null || error === undefined) post({ type: 'consumed', id, bytes: message.chunk.byteLength })
        }),
      )
      break
    case 'end':
      void running.transform.then((transform) => transform.end())
      break
    case 'ack':
      running.unacked -= message.bytes
      void running.transform.then((transform) => {
        if (running.unacked < windowBytes && transform.isPaused()) transform.resume()
      })
      break
    case 'abort':
      streams.delete(id)
      void running.transform.then((transform) => transform.destroy())
      break
  }
})
