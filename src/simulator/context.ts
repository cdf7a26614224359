import type { LabDriver } from '../driver/lab/driver.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import type { XapiDatabase } from './database.js'
import type { LabFeed } from './lab-feed.js'
import type { Sessions } from './sessions.js'

/** What a call's handler may use. */
export interface Services {
  readonly db: XapiDatabase
  readonly feed: LabFeed
  /** the lab itself: some XAPI messages use its operations outside the REST catalogue (VDI.snapshot, VM.create) */
  readonly driver: LabDriver
  readonly sessions: Sessions
  /** the pool master's ref */
  masterRef(): string
}

export interface CallContext extends Services {
  /** the caller's checked session ref ('' for the calls that take none) */
  readonly session: string
  /** aborted when the call's task is cancelled (Async calls) */
  readonly signal: AbortSignal
  /** reports the call's progress, 0 to 1 (Async calls) */
  progress(fraction: number): void
}

/** A message's implementation: its parameters after the session, coerced to their datamodel types. */
export type Handler = (context: CallContext, args: readonly XmlRpcValue[]) => Promise<XmlRpcValue> | XmlRpcValue
