import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'

export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'infrastructure-overview',
    {
      title: 'Infrastructure Overview',
      description: 'Summarise the Keel instance: pools, hosts and VM statistics.',
    },
    () => ({
      description: 'Summarise the Keel instance',
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text:
              'Call the get_infrastructure_summary tool, then give me a short, readable overview of this infrastructure: ' +
              'the number of pools and their names, the number of hosts, and the VMs in total, running, halted and in other states. ' +
              'If the tool fails, tell me what went wrong and what to check.',
          },
        },
      ],
    }),
  )
}
