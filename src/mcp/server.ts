import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { packageRoot } from '../paths.js'
import type { RestClient } from './client.js'
import { registerPrompts } from './prompts.js'
import { registerCollectionTools } from './tools-collections.js'
import { registerDocsTool } from './tools-docs.js'
import { registerOverviewTools } from './tools-overview.js'

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version?: string }
  return version ?? '0.0.0'
}

/** The bridge's MCP server: every tool and the prompt, bound to one service instance. */
export function createBridgeServer(client: RestClient): McpServer {
  const server = new McpServer(
    { name: 'keel-mcp', title: 'Keel', version: packageVersion() },
    {
      // Hosts show this to the model; naming the instance keeps several bridges apart.
      instructions:
        `Read-only access to the Keel virtualization service at ${client.description}. ` +
        'Keel speaks the Xen Orchestra REST API v0: pools, hosts, VMs, SRs, VDIs and networks. ' +
        'Start with get_infrastructure_summary or list_pools; nothing here can change the infrastructure.',
    },
  )
  registerOverviewTools(server, client)
  registerCollectionTools(server, client)
  registerDocsTool(server)
  registerPrompts(server)
  return server
}
