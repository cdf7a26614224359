import { Readable, pipeline } from 'node:stream'
import type { ReadableStream } from 'node:stream/web'
import { setTimeout as sleep } from 'node:timers/promises'
import ndjson from 'ndjson'
import { CliError } from './errors.js'
import { parseCommand } from './args.js'

type Line = [event: string, value: unknown, seq?: number]

/** One readable line: the event, the object's href, then its fields. */
function describe([event, value]: Line): string {
  if (event === 'resync') return 'resync: changes were missed, list the collection again'
  if (typeof value === 'string') return `${event} ${value}`
  const { href, ...fields } = value as Record<string, unknown>
  const shown = Object.entries(fields).map(([name, field]) => `${name}=${typeof field === 'string' ? field : JSON.stringify(field)}`)
  return [event, String(href), ...shown].join(' ')
}

/**
 * `keel watch <collection>`: prints each change of a collection as it comes.
 * Every line carries its event number, so after a dropped connection the
 * watch resumes where it stopped (or says it has to resync).
 */
export async function watch(args: string[], output: NodeJS.WritableStream = process.stdout): Promise<void> {
  const { values, positionals } = parseCommand({
    args,
    options: {
      url: { type: 'string' },
      filter: { type: 'string' },
      fields: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  })
  const [collection] = positionals
  if (collection === undefined || positionals.length > 1 || values.url === undefined) throw new CliError('watch needs --url and one collection', 2)
  const token = process.env['KEEL_TOKEN']
  if (token === undefined || token === '') throw new CliError('watch needs a token in KEEL_TOKEN (see keel token create)', 2)
  let since = 'now'
  let delay = 500
  for (;;) {
    const query = new URLSearchParams({ ndjson: 'true', watch: 'true', since })
    if (values.filter !== undefined) query.set('filter', values.filter)
    if (values.fields !== undefined) query.set('fields', values.fields)
    let response: Response
    try {
      response = await fetch(new URL(`/rest/v0/${encodeURIComponent(collection)}?${query}`, values.url), {
        headers: { cookie: `authenticationToken=${encodeURIComponent(token)}` },
      })
    } catch (error) {
      process.stderr.write(`keel: cannot reach ${values.url} (${(error as Error).message}); retrying\n`)
      await sleep(delay)
      delay = Math.min(delay * 2, 30_000)
      continue
    }
    if (response.status !== 200 || response.body === null) {
      const text = await response.text()
      let message = text
      try {
        message = (JSON.parse(text) as { error?: string }).error ?? text
      } catch {
        // not JSON: show the raw text
      }
      throw new CliError(`watch failed (${response.status}): ${message}`)
    }
    delay = 500
    // pipeline, unlike pipe, carries a dropped connection through to the parser and so to the loop.
    const lines = pipeline(Readable.fromWeb(response.body as ReadableStream), ndjson.parse(), () => {})
    try {
      for await (const line of lines) {
        const value = line as Line
        if (typeof value[2] === 'number') since = String(value[2])
        output.write((values.json ? JSON.stringify(value) : describe(value)) + '\n')
      }
      process.stderr.write('keel: watch connection closed; resuming\n')
    } catch (error) {
      process.stderr.write(`keel: watch connection lost (${(error as Error).message}); resuming\n`)
    }
    await sleep(delay)
  }
}
