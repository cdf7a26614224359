import { pino, type Logger } from 'pino'

export interface ServiceLog {
  readonly log: Logger
  /** Writes out whatever is still buffered, synchronously: at a clean stop and before a fatal exit. */
  flushSync(): void
}

/**
 * pino to stderr through a buffered, asynchronous destination: a request's
 * log line costs a copy into the buffer, and the write happens once 4 KiB have
 * gathered, off the request's path.
 */
export function createServiceLog(level: string): ServiceLog {
  const destination = pino.destination({ fd: 2, sync: false, minLength: 4096 })
  return { log: pino({ level }, destination), flushSync: () => destination.flushSync() }
}
