// The public REST API, as the console calls it: same-origin requests carrying the session cookie.
export const BASE = '/rest/v0'

/** An error as the API words it: its message, its stable code and its data. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error ?? `HTTP ${status}`)
    this.status = status
    this.code = body?.code ?? 'HTTP_' + status
    this.data = body?.data
  }
}

function signInAgain() {
  location.assign('/signin?redirect=' + encodeURIComponent(location.pathname + location.hash))
}

async function failure(response) {
  const text = await response.text()
  let body
  try {
    body = JSON.parse(text)
  } catch {
    body = { error: text || response.statusText }
  }
  if (response.status === 401) signInAgain()
  return new ApiError(response.status, body)
}

/** A request to the API; JSON in and out. `body` may be a Blob (disk uploads). */
export async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin' }
  if (body instanceof Blob) init.body = body
  else if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers['content-type'] = 'application/json'
  }
  const response = await fetch(path.startsWith('/') ? path : `${BASE}/${path}`, init)
  if (!response.ok) throw await failure(response)
  const text = await response.text()
  return text === '' ? undefined : JSON.parse(text)
}

/** Reads an NDJSON listing record by record, handing each batch on as soon as it has arrived. */
export async function ndjson(path, onBatch, signal) {
  const response = await fetch(`${BASE}/${path}${path.includes('?') ? '&' : '?'}ndjson=true`, { credentials: 'same-origin', signal })
  if (!response.ok) throw await failure(response)
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let rest = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    const lines = (rest + value).split('\n')
    rest = lines.pop()
    const batch = []
    for (const line of lines) if (line !== '') batch.push(JSON.parse(line))
    if (batch.length > 0) onBatch(batch)
  }
  if (rest.trim() !== '') onBatch([JSON.parse(rest)])
}

/** An action on an object: answers the task id of what runs on. */
export async function action(collection, id, name, body) {
  const answer = await api(`${collection}/${encodeURIComponent(id)}/actions/${name}`, { method: 'POST', body })
  return answer?.taskId
}

let me
/** The signed-in user's own record (the `me` redirect followed). */
export function whoAmI() {
  me ??= api('users/me')
  return me
}

const decisions = new Map()
/**
 * Whether the signed-in user may do this, as the API decides it (`acl-check`): administrators
 * may do everything; a decision is remembered until access control changes.
 */
export async function may(resource, action, objectId) {
  const user = await whoAmI()
  if (user.permission === 'admin') return true
  const key = `${resource} ${action} ${objectId ?? ''}`
  let decision = decisions.get(key)
  if (decision === undefined) {
    decision = api('acl-check', { method: 'POST', body: { resource, action, ...(objectId === undefined ? {} : { objectId }) } }).then(
      (answer) => answer.allowed,
      () => false,
    )
    decisions.set(key, decision)
  }
  return decision
}

let ownPrivileges
/**
 * Whether any of the signed-in user's privileges allows something beyond reading this resource
 * (on some object, selectors aside): whether selecting objects for bulk actions is worth offering.
 */
export async function mayActOn(resource) {
  const user = await whoAmI()
  if (user.permission === 'admin') return true
  ownPrivileges ??= api(`users/${encodeURIComponent(user.id)}/acl-privileges?fields=resource,action,effect`).catch(() => [])
  return (await ownPrivileges).some((privilege) => privilege.resource === resource && privilege.effect === 'allow' && privilege.action !== 'read')
}

export function forgetDecisions() {
  decisions.clear()
  ownPrivileges = undefined
}

export const formatBytes = (bytes) => {
  if (typeof bytes !== 'number') return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`
}

export const formatTime = (ms) => (typeof ms === 'number' ? new Date(ms).toLocaleString() : '—')
