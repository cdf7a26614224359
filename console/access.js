// Access: users, groups, roles and their privileges and holders, copying a template, the access
// review (acl-check), the audit trail, and the signed-in user's own tokens.
import { useState } from 'preact/hooks'
import { action, api, forgetDecisions, formatTime, whoAmI } from './api.js'
import { useCollection } from './live.js'
import { html, ActionButton, ErrorBox, JsonForm, Table, useAsync, useMay } from './ui.js'

function Role({ role, users, groups, onChange }) {
  const privileges = useAsync(() => api(`acl-roles/${role.id}/privileges?fields=*`), [role.id])
  const holders = useAsync(() => Promise.all([api(`acl-roles/${role.id}/users?fields=id,email`), api(`acl-roles/${role.id}/groups?fields=id,name`)]), [role.id])
  const [holder, setHolder] = useState('')
  const changed = () => {
    forgetDecisions()
    privileges.reload()
    holders.reload()
  }
  const assign = (method) => {
    const [kind, id] = holder.split(':')
    return api(`acl-roles/${role.id}/${kind}/${id}`, { method }).then(changed)
  }
  return html`<div class="role">
    <h3>${role.name} ${role.isTemplate && html`<small>(template)</small>`}</h3>
    <p>${role.description}</p>
    ${role.isTemplate
      ? html`<${ActionButton} privilege=${['acl-role', 'create']} run=${() => action('acl-roles', role.id, 'copy', { name: `${role.name} (copy)` })} onDone=${onChange}>Copy<//>`
      : html`<${ActionButton} privilege=${['acl-role', 'delete']} confirm="Delete this role?" run=${() => api(`acl-roles/${role.id}`, { method: 'DELETE' })} onDone=${onChange}>Delete<//>`}
    <${ErrorBox} error=${privileges.error} />
    <details open=${!role.isTemplate}><summary>${(privileges.value ?? []).length} privileges</summary><${Table} rows=${privileges.value ?? []} columns=${[
      ['Resource', (privilege) => privilege.resource],
      ['Action', (privilege) => privilege.action],
      ['Effect', (privilege) => privilege.effect],
      ['Selector', (privilege) => html`<code>${privilege.selector ?? ''}</code>`],
      ['', (privilege) => !role.isTemplate && html`<${ActionButton} privilege=${['acl-privilege', 'delete']} run=${() => api(`acl-privileges/${privilege.id}`, { method: 'DELETE' })} onDone=${changed}>Remove<//>`],
    ]} /></details>
    ${!role.isTemplate &&
    html`<details><summary>Add a privilege</summary><${JsonForm} label="Add" initial=${{ roleId: role.id, resource: 'vm', action: 'read', effect: 'allow', selector: 'tags:prod' }} submit=${(body) => api('acl-privileges', { method: 'POST', body })} onDone=${changed} /></details>
    <p>Held by: ${(holders.value?.[0] ?? []).map((user) => user.email).join(', ')} ${(holders.value?.[1] ?? []).map((group) => group.name).join(', ')}</p>
    <select value=${holder} onChange=${(event) => setHolder(event.target.value)}>
      <option value="">user or group…</option>
      ${[...users.records.values()].map((user) => html`<option value=${'users:' + user.id}>${user.email}</option>`)}
      ${[...groups.records.values()].map((group) => html`<option value=${'groups:' + group.id}>${group.name}</option>`)}
    </select>
    <${ActionButton} privilege=${['acl-role', 'update:users']} run=${() => assign('PUT')}>Assign<//>
    <${ActionButton} privilege=${['acl-role', 'update:users']} run=${() => assign('DELETE')}>Unassign<//>`}
  </div>`
}

/** A group's members, each removable, and one added from the users listed. */
function Members({ group, users }) {
  const [userId, setUserId] = useState('')
  const members = group.users ?? []
  const change = (method, id) => api(`groups/${group.id}/users/${id}`, { method })
  return html`<div class="tags">
    ${members.map((id) => html`<span class="tag">${users.records.get(id)?.email ?? id}<${ActionButton} className="link" privilege=${['group', 'update:users', group.id]} run=${() => change('DELETE', id)}>×<//></span>`)}
    <select value=${userId} onChange=${(event) => setUserId(event.target.value)}>
      <option value="">add a member…</option>
      ${[...users.records.values()].filter((user) => !members.includes(user.id)).map((user) => html`<option value=${user.id}>${user.email}</option>`)}
    </select>
    <${ActionButton} privilege=${['group', 'update:users', group.id]} run=${() => userId !== '' && change('PUT', userId)}>Add<//>
  </div>`
}

function Review({ users }) {
  const [form, setForm] = useState({ resource: 'vm', action: 'start', objectId: '', userId: '' })
  const [answer, setAnswer] = useState()
  const [error, setError] = useState()
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value })
  const check = async (event) => {
    event.preventDefault()
    setError(undefined)
    setAnswer(undefined)
    const body = { resource: form.resource, action: form.action }
    if (form.objectId !== '') body.objectId = form.objectId
    if (form.userId !== '') body.userId = form.userId
    try {
      setAnswer(await api('acl-check', { method: 'POST', body }))
    } catch (caught) {
      setError(caught)
    }
  }
  return html`<form class="review" onSubmit=${check}>
    <select value=${form.userId} onChange=${set('userId')}><option value="">myself</option>${[...users.records.values()].map((user) => html`<option value=${user.id}>${user.email}</option>`)}</select>
    <input placeholder="resource" value=${form.resource} onInput=${set('resource')} />
    <input placeholder="action" value=${form.action} onInput=${set('action')} />
    <input placeholder="object id (optional)" value=${form.objectId} onInput=${set('objectId')} />
    <button type="submit">Check</button>
    <${ErrorBox} error=${error} />
    ${answer && html`<p class=${answer.allowed ? 'allowed' : 'denied'}>${answer.allowed ? 'Allowed' : 'Denied'}${answer.matched.length > 0 ? ` by ${answer.matched.length} privilege(s)` : ''}${answer.denying.length > 0 ? `, denied by ${answer.denying.length}` : ''}</p>`}
  </form>`
}

function Tokens() {
  const me = useAsync(whoAmI, [])
  const tokens = useAsync(() => (me.value === undefined ? Promise.resolve([]) : api(`users/${me.value.id}/authentication_tokens`)), [me.value?.id])
  const [created, setCreated] = useState()
  return html`<div>
    <${ErrorBox} error=${tokens.error} />
    <${Table} rows=${tokens.value ?? []} empty="No token." columns=${[
      ['Description', (token) => token.description ?? ''],
      ['Created', (token) => formatTime(token.created_at)],
      ['Expires', (token) => formatTime(token.expiration)],
      ['', (token) => html`<${ActionButton} confirm="Revoke this token?" run=${() => api(`users/${me.value.id}/authentication_tokens/${token.identifier}`, { method: 'DELETE' })} onDone=${tokens.reload}>Revoke<//>`],
    ]} />
    <${ActionButton} run=${() => api(`users/${me.value.id}/authentication_tokens`, { method: 'POST', body: { description: 'created in the console' } })} onDone=${(answer) => {
      setCreated(answer.token.id)
      tokens.reload()
    }}>New token<//>
    ${created && html`<p>New token (shown once): <code>${created}</code></p>`}
  </div>`
}

export function Access() {
  const users = useCollection('users')
  const groups = useCollection('groups')
  const roles = useAsync(() => api('acl-roles?fields=*'), [])
  const audit = useAsync(() => api('acl-audit?fields=*'), [])
  const mayCreateUser = useMay('user', 'create')
  const mayCreateGroup = useMay('group', 'create')
  return html`<div class="access">
    <h2>Users</h2>
    <${ErrorBox} error=${users.error} />
    <${Table} rows=${[...users.records.values()]} columns=${[
      ['Email', (user) => user.email],
      ['Permission', (user) => user.permission],
      ['', (user) => html`<${ActionButton} privilege=${['user', 'delete', user.id]} confirm=${'Delete ' + user.email + '?'} run=${() => api(`users/${user.id}`, { method: 'DELETE' })}>Delete<//>`],
    ]} />
    ${mayCreateUser && html`<details><summary>New user</summary><${JsonForm} label="Create" initial=${{ email: 'someone@example.org', password: '', permission: 'none' }} submit=${(body) => api('users', { method: 'POST', body })} /></details>`}
    <h2>Groups</h2>
    <${Table} rows=${[...groups.records.values()]} columns=${[
      ['Name', (group) => group.name],
      ['Members', (group) => html`<${Members} group=${group} users=${users} />`],
    ]} />
    ${mayCreateGroup && html`<details><summary>New group</summary><${JsonForm} label="Create" initial=${{ name: 'operators' }} submit=${(body) => api('groups', { method: 'POST', body })} /></details>`}
    <h2>Roles</h2>
    <${ErrorBox} error=${roles.error} />
    ${(roles.value ?? []).map((role) => html`<${Role} key=${role.id} role=${role} users=${users} groups=${groups} onChange=${roles.reload} />`)}
    <h2>Access review</h2>
    <${Review} users=${users} />
    <h2>Audit trail</h2>
    <${ErrorBox} error=${audit.error} />
    <${Table} rows=${[...(audit.value ?? [])].reverse().slice(0, 100)} empty="No change yet." columns=${[
      ['When', (entry) => formatTime(entry.time)],
      ['Who', (entry) => users.records.get(entry.actorId)?.email ?? entry.actorId],
      ['What', (entry) => `${entry.operation} ${entry.objectType} ${entry.objectId}`],
    ]} />
    <h2>My tokens</h2>
    <${Tokens} />
  </div>`
}
