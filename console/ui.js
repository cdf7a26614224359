// Components every view shares.
import { h } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import htm from 'htm'
import { api, may } from './api.js'

export const html = htm.bind(h)

/** An error as the API words it: message, code, and what its data names. */
export function ErrorBox({ error }) {
  if (error === undefined || error === null) return null
  const data = error.data === undefined ? '' : JSON.stringify(error.data)
  return html`<p class="error" role="alert"><strong>${error.code ?? 'ERROR'}</strong> ${error.message}${data && html` <code>${data}</code>`}</p>`
}

/** A value loaded once (not polled): `reload` asks for it again after a change the console made. */
export function useAsync(load, deps) {
  const [state, setState] = useState({ loading: true })
  const [round, setRound] = useState(0)
  useEffect(() => {
    let live = true
    setState((previous) => ({ ...previous, loading: true }))
    load().then(
      (value) => live && setState({ value, loading: false }),
      (error) => live && setState({ error, loading: false }),
    )
    return () => {
      live = false
    }
  }, [...deps, round])
  return { ...state, reload: () => setRound((n) => n + 1) }
}

/** Whether the signed-in user may do this; undefined while the API is asked. Without a resource, anyone may. */
export function useMay(resource, actionName, objectId) {
  const [allowed, setAllowed] = useState(resource === undefined ? true : undefined)
  useEffect(() => {
    if (resource === undefined) return undefined
    let live = true
    may(resource, actionName, objectId).then((answer) => live && setAllowed(answer))
    return () => {
      live = false
    }
  }, [resource, actionName, objectId])
  return allowed
}

/**
 * A button offered only to who may use it (`privilege`: [resource, action, objectId?]);
 * a refusal that still happens is shown as the API words it.
 */
export function ActionButton({ privilege, run, children, confirm: question, className = '', onDone }) {
  const allowed = useMay(...(privilege ?? []))
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState()
  if (allowed !== true) return null
  const click = async () => {
    if (question !== undefined && !window.confirm(question)) return
    setBusy(true)
    setError(undefined)
    try {
      const result = await run()
      onDone?.(result)
    } catch (caught) {
      setError(caught)
    }
    setBusy(false)
  }
  return html`<span class="action"><button class=${className} disabled=${busy} onClick=${click}>${children}</button><${ErrorBox} error=${error} /></span>`
}

export function Bar({ used, total, label }) {
  const ratio = total > 0 ? Math.min(1, used / total) : 0
  return html`<div class="bar" title=${label}><div class=${'fill' + (ratio > 0.9 ? ' high' : '')} style=${{ width: `${(ratio * 100).toFixed(1)}%` }}></div><span>${label}</span></div>`
}

export function StateBadge({ state }) {
  if (state === undefined) return null
  return html`<span class=${'state state-' + String(state).toLowerCase()}>${state}</span>`
}

export const link = (collection, id) => `#/${collection}/${encodeURIComponent(id)}`

/** Tags added and removed inline, for those who may. */
export function Tags({ collection, resource, id, tags = [] }) {
  const [text, setText] = useState('')
  const [error, setError] = useState()
  const mayTag = useMay(resource, 'update:tags', id)
  const change = async (method, tag) => {
    setError(undefined)
    try {
      await api(`${collection}/${encodeURIComponent(id)}/tags/${encodeURIComponent(tag)}`, { method })
      if (method === 'PUT') setText('')
    } catch (caught) {
      setError(caught)
    }
  }
  return html`<div class="tags">
    ${tags.map((tag) => html`<span class="tag">${tag}${mayTag && html`<button class="link" title="Remove" aria-label=${'remove tag ' + tag} onClick=${() => change('DELETE', tag)}>×</button>`}</span>`)}
    ${mayTag &&
    html`<form class="inline" onSubmit=${(event) => {
      event.preventDefault()
      if (text.trim() !== '') change('PUT', text.trim())
    }}><input class="tag-input" placeholder="add tag" value=${text} onInput=${(event) => setText(event.target.value)} /></form>`}
    <${ErrorBox} error=${error} />
  </div>`
}

/** A plain table of records. `columns`: [heading, record => cell]. */
export function Table({ rows, columns, empty = 'None.', rowClass }) {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`
  return html`<table>
    <thead><tr>${columns.map(([heading]) => html`<th>${heading}</th>`)}</tr></thead>
    <tbody>${rows.map((row) => html`<tr class=${rowClass?.(row) ?? ''}>${columns.map(([, cell]) => html`<td>${cell(row)}</td>`)}</tr>`)}</tbody>
  </table>`
}

/** A JSON body edited as text and sent: how the console creates and edits backup objects and privileges. */
export function JsonForm({ initial, submit, label, onDone }) {
  const [text, setText] = useState(JSON.stringify(initial, null, 2))
  const [error, setError] = useState()
  const send = async (event) => {
    event.preventDefault()
    setError(undefined)
    let body
    try {
      body = JSON.parse(text)
    } catch (caught) {
      setError({ code: 'INVALID_JSON', message: caught.message })
      return
    }
    try {
      onDone?.(await submit(body))
    } catch (caught) {
      setError(caught)
    }
  }
  return html`<form class="json-form" onSubmit=${send}>
    <textarea rows="8" value=${text} onInput=${(event) => setText(event.target.value)}></textarea>
    <button type="submit">${label}</button>
    <${ErrorBox} error=${error} />
  </form>`
}

/** Saves text as a file the browser downloads. */
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const anchor = document.createElement('a')
  anchor.href = url
  anchor.download = name
  document.body.append(anchor)
  anchor.click()
  anchor.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}
