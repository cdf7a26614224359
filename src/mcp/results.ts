import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { BridgeError } from './client.js'

/** Every tool is a read; the hints let MCP hosts skip their confirmation prompts. */
export const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const

export function jsonResult(data: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }] }
}

/** For tools with an output schema: the structured value, mirrored as JSON text for older hosts. */
export function structuredResult(data: Record<string, unknown>): CallToolResult {
  return { ...jsonResult(data), structuredContent: data }
}

export function textResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] }
}

/**
 * A failure the assistant sees and can relay: a result with `isError`, never
 * a protocol error. `notFoundHint` tells the person where valid ids come from.
 */
export function failureResult(label: string, error: unknown, notFoundHint?: string): CallToolResult {
  const message = error instanceof Error ? error.message : 'Unknown error occurred'
  const hint = error instanceof BridgeError && error.kind === 'not-found' && notFoundHint !== undefined ? ` ${notFoundHint}` : ''
  return { content: [{ type: 'text', text: `Failed to ${label}: ${message}${hint}` }], isError: true }
}

/** Runs a tool body, turning any failure into a failure result. */
export async function attempt(
  label: string,
  body: () => Promise<CallToolResult>,
  notFoundHint?: string,
): Promise<CallToolResult> {
  try {
    return await body()
  } catch (error) {
    return failureResult(label, error, notFoundHint)
  }
}
