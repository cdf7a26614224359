// Collections kept live: listed once (NDJSON), then changed by one EventSource on /rest/v0/events
// with one subscription per collection in use, resumed with Last-Event-ID after a drop.
import { useEffect, useState } from 'preact/hooks'
import { api, ndjson } from './api.js'

/** The REST collection, its event type and the fields the console shows of it. */
export const collections = {
  pools: { type: 'pool', fields: ['id', 'name_label', 'name_description', 'tags', 'master'] },
  hosts: { type: 'host', fields: ['id', 'name_label', '$pool', 'power_state', 'enabled', 'address', 'tags', 'cpus', 'memory'] },
  vms: { type: 'VM', fields: ['id', 'name_label', 'power_state', '$pool', '$container', 'tags', 'mainIpAddress'] },
  'vm-snapshots': { type: 'VM-snapshot', fields: ['id', 'name_label', '$snapshot_of', 'snapshot_time', '$pool'] },
  'vm-templates': { type: 'VM-template', fields: ['id', 'name_label', '$pool'] },
  srs: { type: 'SR', fields: ['id', 'name_label', '$pool', '$container', 'size', 'physical_usage', 'SR_type', 'tags'] },
  vdis: { type: 'VDI', fields: ['id', 'name_label', 'size', 'usage', '$SR', '$VBDs'] },
  vbds: { type: 'VBD', fields: ['id', 'VM', 'VDI', 'device', 'is_cd_drive'] },
  networks: { type: 'network', fields: ['id', 'name_label', '$pool', 'bridge', 'MTU', 'tags'] },
  alarms: { type: 'alarm', fields: ['id', 'name', 'body', 'object', 'time', '$pool'] },
  tasks: { type: 'task', fields: ['id', 'status', 'properties', 'start', 'end', 'result'] },
  users: { type: 'user', fields: ['id', 'email', 'permission', 'groups'] },
  groups: { type: 'group', fields: ['id', 'name', 'users'] },
}

const stores = new Map()
const statusListeners = new Set()
let status = 'connecting'
let source
let connectionId

function setStatus(next) {
  status = next
  for (const listener of statusListeners) listener(next)
}

function notify(store) {
  store.version++
  if (store.scheduled) return
  store.scheduled = true
  // However many events arrive in a frame, views render once per frame.
  requestAnimationFrame(() => {
    store.scheduled = false
    for (const listener of store.listeners) listener(store.version)
  })
}

async function subscribe(name) {
  if (connectionId === undefined) return
  const { type, fields } = collections[name]
  const id = connectionId
  try {
    await api(`events/${id}/subscriptions`, { method: 'POST', body: { collection: type, fields } })
  } catch (error) {
    const store = stores.get(name)
    if (store !== undefined && error.status === 403) store.error = error
  }
}

async function load(store) {
  store.loading = true
  store.error = undefined
  const fresh = new Map()
  // Events that arrive while listing win over the listing's older records.
  store.touched = new Set()
  try {
    await ndjson(`${store.name}?fields=${collections[store.name].fields.join(',')}`, (batch) => {
      for (const record of batch) if (!store.touched.has(record.id)) fresh.set(record.id, record)
      // The first screen is drawn from the first records; a listing again replaces the records once complete.
      if (store.records.size === 0) store.records = fresh
      notify(store)
    })
    for (const id of store.touched) {
      const live = store.records.get(id)
      if (live === undefined) fresh.delete(id)
      else fresh.set(id, live)
    }
    store.records = fresh
  } catch (error) {
    store.error = error
  }
  store.touched = undefined
  store.loading = false
  store.loaded = true
  notify(store)
}

function storeOf(name) {
  let store = stores.get(name)
  if (store === undefined) {
    store = { name, records: new Map(), version: 0, listeners: new Set(), loaded: false, loading: false }
    stores.set(name, store)
    connect()
    subscribe(name)
    load(store)
  }
  return store
}

const byType = (type) => Object.keys(collections).find((name) => collections[name].type === type)

function apply(kind, data) {
  const name = byType(data.$subscription)
  const store = name === undefined ? undefined : stores.get(name)
  if (store === undefined || typeof data.id !== 'string') return
  const record = { ...data }
  delete record.$subscription
  store.touched?.add(record.id)
  if (kind === 'remove') store.records.delete(record.id)
  else store.records.set(record.id, { ...store.records.get(record.id), ...record })
  notify(store)
}

/** The one event stream; the browser reconnects it by itself and sends Last-Event-ID. */
function connect() {
  if (source !== undefined) return
  source = new EventSource(`/rest/v0/events`)
  source.addEventListener('init', (event) => {
    connectionId = JSON.parse(event.data).id
    setStatus('live')
    for (const name of stores.keys()) subscribe(name)
  })
  for (const kind of ['add', 'update', 'remove']) source.addEventListener(kind, (event) => apply(kind, JSON.parse(event.data)))
  // The changes missed are no longer held: everything in use is listed again.
  source.addEventListener('resync', () => {
    for (const store of stores.values()) load(store)
  })
  source.addEventListener('error', () => {
    connectionId = undefined
    setStatus('reconnecting')
    if (source.readyState === EventSource.CLOSED) {
      // Refused (a revoked session, a restart): a new stream, and what it cannot replay listed again.
      source = undefined
      setTimeout(() => {
        connect()
        for (const store of stores.values()) load(store)
      }, 2000)
    }
  })
}

/** A collection's records, kept live; the view renders again at most once a frame. */
export function useCollection(name) {
  const store = storeOf(name)
  const [, setVersion] = useState(store.version)
  useEffect(() => {
    store.listeners.add(setVersion)
    return () => store.listeners.delete(setVersion)
  }, [store])
  return store
}

export function useLiveStatus() {
  const [current, setCurrent] = useState(status)
  useEffect(() => {
    statusListeners.add(setCurrent)
    return () => statusListeners.delete(setCurrent)
  }, [])
  return current
}

/** Lists a collection again (after a change that no event reports, such as a filter's answer). */
export function reload(name) {
  const store = stores.get(name)
  if (store !== undefined) load(store)
}
