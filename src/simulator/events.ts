import { servedClasses, xapiClassOfEvent } from '../xapi/datamodel/index.js'
import { XmlRpcDouble, type XmlRpcValue } from '../xapi/xml-rpc.js'
import type { CallContext, Handler } from './context.js'
import type { XapiDatabase, XapiEvent } from './database.js'
import { XapiFailure } from './failures.js'

/** Events one event.from answers at most; the rest come with the next call. */
const BATCH_LIMIT = 50_000
/** The longest event.from waits, whatever timeout it asks (XO asks 60.1 s). */
const MAX_WAIT_MS = 600_000

/** Tokens are zero-padded generations, so they compare as strings the way they compare as numbers (the event.inject doc). */
export const token = (generation: number): string => String(generation).padStart(20, '0')

function parseToken(text: string): number | undefined {
  if (text === '') return undefined
  if (!/^\d{1,20}$/.test(text)) throw new XapiFailure('EVENT_FROM_TOKEN_PARSE_FAILURE', text)
  return Number(text)
}

interface Filter {
  readonly classes: Set<string>
  /** class → refs, for `vm/OpaqueRef:…` subscriptions */
  readonly refs: Map<string, Set<string>>
  readonly all: boolean
}

function parseClasses(classes: readonly XmlRpcValue[]): Filter {
  const filter: Filter = { classes: new Set(), refs: new Map(), all: false }
  for (const entry of classes.map(String)) {
    if (entry === '*') return { ...filter, all: true }
    const [name = '', ref] = entry.split('/')
    const cls = xapiClassOfEvent(name)
    if (cls === undefined) continue
    if (ref === undefined) filter.classes.add(cls.name)
    else filter.refs.set(cls.name, (filter.refs.get(cls.name) ?? new Set()).add(ref))
  }
  return filter
}

const matches = (filter: Filter, event: Pick<XapiEvent, 'cls' | 'ref'>): boolean =>
  filter.all || filter.classes.has(event.cls) || filter.refs.get(event.cls)?.has(event.ref) === true

function watchedClasses(filter: Filter): string[] {
  if (filter.all) return [...servedClasses()].map((cls) => cls.name).filter((name) => name !== 'event')
  return [...new Set([...filter.classes, ...filter.refs.keys()])]
}

const wire = (event: XapiEvent): XmlRpcValue => ({
  id: event.id,
  timestamp: new XmlRpcDouble(event.timestamp.getTime() / 1000),
  class: event.cls.toLowerCase(),
  operation: event.operation,
  ref: event.ref,
  obj_uuid: event.uuid,
  snapshot: event.snapshot,
})

/** One event per object: its last change, except that an object added in the batch stays an `add`. */
function coalesce(events: readonly XapiEvent[]): XapiEvent[] {
  const last = new Map<string, XapiEvent>()
  for (const event of events) {
    const previous = last.get(event.ref)
    last.delete(event.ref)
    if (previous?.operation === 'add' && event.operation === 'del') continue
    last.set(event.ref, previous?.operation === 'add' && event.operation === 'mod' ? { ...event, operation: 'add' } : event)
  }
  return [...last.values()].sort((a, b) => a.id - b.id)
}

/**
 * Resolves after the first change, once the turn that made it is over: a call
 * that writes an object several times in a row (set_tags, a tag at a time in
 * the lab) is answered as one event, as XAPI commits a call's write before
 * any event.from sees it, rather than its first write alone and the rest later.
 */
function waitForChange(db: XapiDatabase, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      stop()
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    const stop = db.onChange(() => {
      stop()
      setImmediate(done)
    })
    signal.addEventListener('abort', done)
  })
}

/**
 * event.from (shared notes on xapi §1.4): the changes after a token to the
 * watched classes, one per object, waiting up to `timeout` seconds for the
 * first; from the empty token, every object as an `add`. A token older than
 * the kept log answers EVENTS_LOST, and the client fetches everything again.
 */
async function eventFrom(context: CallContext, classes: readonly XmlRpcValue[], tokenText: string, timeout: number): Promise<XmlRpcValue> {
  const { db } = context
  const filter = parseClasses(classes)
  const from = parseToken(tokenText)
  const watched = watchedClasses(filter)
  const answer = (events: XmlRpcValue[], generation: number): XmlRpcValue => ({
    events,
    valid_ref_counts: Object.fromEntries(watched.map((cls) => [cls.toLowerCase(), db.countOfClass(cls)])),
    token: token(generation),
  })
  if (from === undefined) {
    const generation = db.generation
    const events: XmlRpcValue[] = []
    for (const cls of watched) {
      for (const object of db.ofClass(cls)) {
        if (!matches(filter, object)) continue
        events.push({ id: generation, timestamp: new XmlRpcDouble(Date.now() / 1000), class: cls.toLowerCase(), operation: 'add', ref: object.ref, obj_uuid: object.uuid, snapshot: object.record })
      }
    }
    return answer(events, generation)
  }
  // A token from before a restart (or from another pool) names nothing kept here.
  if (from > db.generation) throw new XapiFailure('EVENTS_LOST')
  const deadline = Date.now() + Math.min(Math.max(0, timeout) * 1000, MAX_WAIT_MS)
  for (;;) {
    if (from < db.oldestLogged - 1) throw new XapiFailure('EVENTS_LOST')
    const logged = db.eventsAfter(from, BATCH_LIMIT)
    const end = logged.at(-1)?.id ?? db.generation
    const events = coalesce(logged.filter((event) => matches(filter, event)))
    const remaining = deadline - Date.now()
    if (events.length > 0 || remaining <= 0 || context.signal.aborted) return answer(events.map(wire), Math.max(end, from))
    await waitForChange(db, remaining, context.signal)
    // A client that logged out meanwhile gets SESSION_INVALID, as from XAPI.
    context.sessions.check(context.session)
  }
}

export const eventHandlers: Readonly<Record<string, Handler>> = {
  'event.from': (context, [classes, tokenText, timeout]) =>
    eventFrom(context, Array.isArray(classes) ? classes : [], String(tokenText), timeout instanceof XmlRpcDouble ? timeout.value : Number(timeout)),
  'event.inject': ({ db }, [cls, ref]) => {
    const found = xapiClassOfEvent(String(cls))
    if (found === undefined) throw new XapiFailure('HANDLE_INVALID', String(cls), String(ref))
    return token(db.touch(found.name, String(ref)))
  },
  'event.get_current_id': ({ db }) => db.generation,
}
