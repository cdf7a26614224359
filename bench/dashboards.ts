// The stats and dashboard section (issue 31): `GET /rest/v0/dashboard` (the site's) and the stats
// routes of a pool, a host and a VM, on a generated lab of 10,000 VMs, under load from a child
// process: requests per second and p99. Its own Keel; sizes from BENCH_DASHBOARD_VMS and
// BENCH_DASHBOARD_HOSTS.
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { runScript, startServer, stop } from './keel-client.js'
import type { LoadRequest, LoadResult } from './load-child.js'

export interface DashboardsOptions {
  readonly vms: number
  readonly hosts: number
  readonly pin: boolean
  readonly duration: number
  readonly connections: number
}

export const dashboardsBenchOptions = (pin: boolean): DashboardsOptions => ({
  vms: Number(process.env['BENCH_DASHBOARD_VMS'] ?? 10_000),
  hosts: Number(process.env['BENCH_DASHBOARD_HOSTS'] ?? 50),
  pin,
  duration: Number(process.env['BENCH_DURATION'] ?? 10),
  connections: Number(process.env['BENCH_CONNECTIONS'] ?? 50),
})

async function firstId(url: string, headers: Record<string, string>, collection: string, filter = ''): Promise<string> {
  const ids = (await (await fetch(`${url}/rest/v0/${collection}?limit=1${filter}`, { headers })).json()) as string[]
  const [id] = ids
  if (id === undefined) throw new Error(`the generated lab has no ${collection}`)
  return id.replace(/^.*\//, '')
}

export async function dashboardsBench(options: DashboardsOptions): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-dashboards-'))
  const keel = await startServer('serve-keel.js', [dataDir, String(options.vms), String(options.hosts)], options.pin, 'ignore')
  try {
    const auth = { authorization: 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64') }
    const created = await fetch(`${keel.url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: auth })
    const headers = { cookie: `authenticationToken=${((await created.json()) as { token: { id: string } }).token.id}` }
    const pool = await firstId(keel.url, headers, 'pools')
    const host = await firstId(keel.url, headers, 'hosts', '&filter=power_state:Running')
    // Only a running VM has stats.
    const vm = await firstId(keel.url, headers, 'vms', '&filter=power_state:Running')
    const cases = [
      { name: 'site dashboard', path: '/rest/v0/dashboard' },
      { name: 'pool dashboard', path: `/rest/v0/pools/${pool}/dashboard` },
      { name: 'pool stats', path: `/rest/v0/pools/${pool}/stats` },
      { name: 'host stats', path: `/rest/v0/hosts/${host}/stats` },
      { name: 'VM stats', path: `/rest/v0/vms/${vm}/stats` },
    ]
    const rows: string[] = []
    for (const item of cases) {
      const response = await fetch(keel.url + item.path, { headers })
      const bytes = (await response.arrayBuffer()).byteLength
      if (response.status !== 200) throw new Error(`${item.path}: ${response.status}`)
      const request: LoadRequest = { url: keel.url + item.path, headers, connections: options.connections, warmup: Math.min(3, options.duration), duration: options.duration, uniquePaths: false }
      const load = loadavg()[0] ?? NaN
      const { line } = await runScript('load-child.js', [JSON.stringify(request)], { core: options.pin ? 1 : undefined, stderr: 'inherit' })
      const result = JSON.parse(line) as LoadResult
      rows.push(`| ${item.name} (\`${item.path.replace(/[0-9a-f-]{36}/g, '<id>')}\`, ${bytes} B) | ${result.requests.toFixed(0)} | ${result.p99.toFixed(2)} | ${result.errors} | ${load.toFixed(1)} |`)
    }
    return (
      `Stats and dashboards, ${options.vms} VMs on ${options.hosts} hosts, ${options.connections} connections, ${options.duration} s per route:\n\n` +
      '| route | req/s | p99 ms | errors | load average before |\n|---|---|---|---|---|\n' +
      rows.join('\n') +
      '\n'
    )
  } finally {
    await stop(keel.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
}
