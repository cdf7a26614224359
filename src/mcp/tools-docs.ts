import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { DOC_TOPIC_SUMMARIES, DOC_TOPICS, readDocPage } from './docs.js'
import { attempt, READ_ONLY, textResult } from './results.js'

const topicList = DOC_TOPICS.map((topic) => `\`${topic}\` (${DOC_TOPIC_SUMMARIES[topic]})`).join('; ')

export function registerDocsTool(server: McpServer): void {
  server.registerTool(
    'search_documentation',
    {
      title: 'Search Keel Documentation',
      description: `Return Keel's reference documentation for one topic. The pages ship with the bridge; no network is used. Topics: ${topicList}.`,
      inputSchema: z.object({ topic: z.enum(DOC_TOPICS).describe('the documentation topic') }),
      annotations: { title: 'Search Keel Documentation', ...READ_ONLY },
    },
    ({ topic }) =>
      attempt('read the documentation', async () => {
        const page = await readDocPage(topic)
        return textResult(`# Keel documentation: ${topic}\nSource: docs/${topic}.md (bundled with keel-mcp)\n\n${page}`)
      }),
  )
}
