#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { RestClient } from './client.js'
import { ConfigError, readConfig } from './config.js'
import { createBridgeServer } from './server.js'

// stdout carries the protocol alone: everything for a person goes to stderr.
const log = (line: string): void => {
  process.stderr.write(`keel-mcp: ${line}\n`)
}

async function main(): Promise<void> {
  const config = readConfig(process.env)
  const client = new RestClient(config)
  const server = createBridgeServer(client)
  await server.connect(new StdioServerTransport())
  log(`serving ${client.description} over stdio (read-only)`)
  if (client.problem !== undefined) log(`warning: ${client.problem}`)
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    log(`${error.message}\nSee docs/configuration.md, section "Assistant bridge".`)
    process.exit(error.exitCode)
  }
  log((error as Error).stack ?? String(error))
  process.exit(1)
})
