import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import type { RestClient } from './client.js'
import { attempt, READ_ONLY, structuredResult, textResult } from './results.js'
import { InfrastructureSummary, PoolDashboard } from './schemas.js'

interface Named {
  name_label?: string
}

interface WithPowerState {
  power_state?: string
}

/** Counts from three listings fetched side by side, as the reference bridge does. */
export async function infrastructureSummary(client: RestClient): Promise<InfrastructureSummary> {
  const [pools, hosts, vms] = await Promise.all([
    client.get<Named[]>('/pools', { fields: 'id,name_label' }),
    client.get<WithPowerState[]>('/hosts', { fields: 'id,name_label,power_state' }),
    client.get<WithPowerState[]>('/vms', { fields: 'id,power_state' }),
  ])
  const running = vms.filter((vm) => vm.power_state === 'Running').length
  const halted = vms.filter((vm) => vm.power_state === 'Halted').length
  return {
    pools: { total: pools.length, names: pools.map((pool) => pool.name_label ?? '') },
    hosts: { total: hosts.length },
    vms: { total: vms.length, running, halted, other: vms.length - running - halted },
  }
}

export function registerOverviewTools(server: McpServer, client: RestClient): void {
  server.registerTool(
    'check_connection',
    {
      title: 'Check Connection',
      description: 'Test the connection to the Keel instance and its credentials (one small read).',
      annotations: { title: 'Check Connection', ...READ_ONLY },
    },
    async () => {
      try {
        await client.get('/pools', { limit: 1 })
        return textResult(`Connection to Keel successful: ${client.description}.`)
      } catch (error) {
        return { content: [{ type: 'text', text: `Connection test failed: ${(error as Error).message}` }], isError: true }
      }
    },
  )

  server.registerTool(
    'get_infrastructure_summary',
    {
      title: 'Get Infrastructure Summary',
      description: 'Counts of the Keel instance: pools (with their names), hosts, and VMs by power state (running, halted, other).',
      outputSchema: InfrastructureSummary,
      annotations: { title: 'Get Infrastructure Summary', ...READ_ONLY },
    },
    () => attempt('get infrastructure summary', async () => structuredResult(await infrastructureSummary(client))),
  )

  server.registerTool(
    'get_pool_dashboard',
    {
      title: 'Get Pool Dashboard',
      description:
        'Aggregated view of one pool: host status counts, top five hosts by RAM and CPU use, VM status counts, top SRs by use, ' +
        'ids of the active alarms, and CPU provisioning (vCPUs of running VMs against physical cores).',
      inputSchema: z.object({ pool_id: z.string().min(1).describe('pool id (the `id` field of list_pools)') }),
      outputSchema: PoolDashboard,
      annotations: { title: 'Get Pool Dashboard', ...READ_ONLY },
    },
    ({ pool_id }) =>
      attempt(
        'get pool dashboard',
        async () =>
          structuredResult(await client.get<Record<string, unknown>>(`/pools/${encodeURIComponent(pool_id)}/dashboard`, { ndjson: false })),
        'Use list_pools to find valid pool ids.',
      ),
  )
}
