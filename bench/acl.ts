// Access control's cost on listings: the same 10,000-VM listing as an administrator and as a
// non-administrator whose roles hold 50 privileges with selectors, measured in the same run.

import type { LoadResult } from './load-child.js'

type Load = (url: string, headers: Record<string, string>, uniquePaths: boolean) => Promise<LoadResult>

const TAGS = ['prod', 'staging', 'dev', 'web', 'database', 'batch', 'backup']

/**
 * Fifty selectors of the shapes the notes list (tags, power state, names, pools, creators), some of
 * them denies that match nothing, and one that matches every VM: the scoped user sees the same
 * 10,000 VMs as the administrator, so the two listings differ only by the evaluation.
 */
function privileges(poolId: string, creatorId: string): Array<Record<string, string>> {
  const rules: Array<Record<string, string>> = [{ resource: 'vm', action: 'read', effect: 'allow', selector: 'name_label:vm-' }]
  for (let i = 1; i < 50; i++) {
    const kind = i % 5
    const selector =
      kind === 0
        ? `tags:${TAGS[i % TAGS.length] as string}`
        : kind === 1
          ? `power_state:${i % 2 === 0 ? 'Running' : 'Halted'} name_label:vm-${i % 10}*`
          : kind === 2
            ? `$pool:${poolId} name_label:/${i % 10}$/`
            : kind === 3
              ? `creation:creator:${creatorId} CPUs:number:>${i % 8}`
              : `name_label:vm-0${String(i).padStart(2, '0')}*`
    const deny = i % 17 === 16
    rules.push({ resource: 'vm', action: 'read', effect: deny ? 'deny' : 'allow', selector: deny ? `${selector} tags:no-such-tag` : selector })
  }
  return rules
}

async function json<T>(url: string, headers: Record<string, string>, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return (await response.json()) as T
}

/** Markdown rows: the listing as administrator, as the scoped user, and their ratio. */
export async function aclBench(base: string, admin: Record<string, string>, load: Load): Promise<string> {
  const api = `${base}/rest/v0`
  const [pool] = await json<Array<{ id: string }>>(`${api}/pools?fields=id`, admin)
  const [creator] = await json<Array<{ id: string }>>(`${api}/users?fields=id`, admin)
  const email = `scoped-${Date.now()}@bench.local`
  const password = 'scoped-bench-password'
  const user = await json<{ id: string }>(`${api}/users`, admin, { email, password })
  const role = await json<{ id: string }>(`${api}/acl-roles`, admin, { name: 'bench scope' })
  for (const privilege of privileges(pool?.id ?? '', creator?.id ?? '')) {
    await json(`${api}/acl-privileges`, admin, { ...privilege, roleId: role.id })
  }
  await fetch(`${api}/acl-roles/${role.id}/users/${user.id}`, { method: 'PUT', headers: admin })
  const basic = { authorization: 'Basic ' + Buffer.from(`${email}:${password}`).toString('base64') }
  const token = (await json<{ token: { id: string } }>(`${api}/users/${user.id}/authentication_tokens`, basic, {})).token.id
  const scoped = { cookie: `authenticationToken=${token}` }

  const path = `${api}/vms?fields=name_label,power_state`
  const visible = (await json<unknown[]>(path, scoped)).length
  const rows: string[] = []
  for (const unique of [false, true]) {
    const asAdmin = await load(path, admin, unique)
    const asScoped = await load(path, scoped, unique)
    const label = unique ? 'a new query string each time' : 'repeated query'
    rows.push(
      `| ${label} | ${asAdmin.requests.toFixed(0)} | ${asAdmin.p99.toFixed(1)} | ${asScoped.requests.toFixed(0)} (${visible} VMs visible) | ${asScoped.p99.toFixed(1)} | ${(asScoped.requests / asAdmin.requests).toFixed(2)} | ${asAdmin.errors + asScoped.errors} |`,
    )
  }
  return (
    '| `GET /rest/v0/vms?fields=name_label,power_state`, 10,000 VMs | admin req/s | admin p99 ms | scoped req/s | scoped p99 ms | scoped / admin | errors |\n' +
    '|---|---|---|---|---|---|---|\n' +
    rows.join('\n') +
    '\n'
  )
}
