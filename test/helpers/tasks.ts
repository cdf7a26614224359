import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, type TestServer } from './server.js'
import { openLines } from './streams.js'

export interface FollowedTasks {
  /** resolves once `count` tasks started since following began have ended, whatever their outcome */
  ended(count: number): Promise<void>
  close(): void
}

/**
 * The server's tasks, followed from now on. Every upload and download is a task that ends only
 * once its work is undone or kept: a test waits for that end instead of sleeping after a client
 * goes away.
 */
export async function followTasks(server: TestServer): Promise<FollowedTasks> {
  const lines = await openLines(`${server.url}/rest/v0/tasks?ndjson=true&watch=true&fields=status`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
  const endedCount = (): number => {
    const ended = new Set<string>()
    for (const line of lines.values as Array<[string, { status?: string; href: string }]>) {
      if (line[0] === 'update' && line[1].status !== 'pending') ended.add(line[1].href)
    }
    return ended.size
  }
  return {
    async ended(count) {
      while (endedCount() < count) await lines.until(lines.values.length + 1, 30_000)
    },
    close: () => lines.close(),
  }
}
