// Running and recent tasks with live progress, abort where allowed.
import { action, formatTime } from './api.js'
import { useCollection } from './live.js'
import { html, ActionButton, Table } from './ui.js'

function Progress({ task }) {
  const progress = task.properties?.progress ?? (task.status === 'success' ? 100 : 0)
  return html`<progress max="100" value=${progress}></progress> ${progress}%`
}

const columns = [
  ['Task', (task) => task.properties?.name ?? task.id],
  ['Status', (task) => html`<span class=${'state state-' + task.status}>${task.status}</span>`],
  ['Progress', (task) => html`<${Progress} task=${task} />`],
  ['Started', (task) => formatTime(task.start)],
  ['', (task) => task.status === 'pending' && html`<${ActionButton} privilege=${['task', 'abort', task.id]} run=${() => action('tasks', task.id, 'abort')}>Abort<//>`],
]

/** Tasks, newest first; those of one object when `objectId` is given. */
export function TaskList({ objectId, limit = 50 }) {
  const tasks = useCollection('tasks')
  const rows = [...tasks.records.values()]
    .filter((task) => objectId === undefined || task.properties?.objectId === objectId)
    .sort((a, b) => (b.status === 'pending') - (a.status === 'pending') || (b.start ?? 0) - (a.start ?? 0))
    .slice(0, limit)
  return html`<${Table} rows=${rows} columns=${columns} empty="No task." />`
}

export function TasksPanel({ onClose }) {
  return html`<aside class="tasks-panel" id="tasks-panel">
    <header><h3>Tasks</h3><button class="link" onClick=${onClose}>Close</button></header>
    <${TaskList} />
  </aside>`
}
