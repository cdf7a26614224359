import { parseArgs, type ParseArgsConfig } from 'node:util'

/** The flags every command that talks to a running server takes. */
export const connection = { url: { type: 'string' }, token: { type: 'string' } } as const

type Options = NonNullable<ParseArgsConfig['options']>

/**
 * `--name value` rewritten as `--name=value` for the options that take a value.
 * node's parser refuses a separate value that starts with a dash as ambiguous,
 * and tokens are base64url: one in 64 starts with one, so `--token <token>`
 * would fail at random.
 */
function attachValues(args: readonly string[], options: Options): string[] {
  const valued = new Map<string, string>()
  for (const [name, option] of Object.entries(options)) {
    if (option.type !== 'string') continue
    valued.set(`--${name}`, name)
    if (option.short !== undefined) valued.set(`-${option.short}`, name)
  }
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--') {
      out.push(...args.slice(i))
      break
    }
    const name = valued.get(arg)
    const value = args[i + 1]
    // A following flag that is itself an option is a missing value, left for the parser to name.
    if (name !== undefined && value !== undefined && !valued.has(value) && !(value.startsWith('--') && value.slice(2) in options)) {
      out.push(`--${name}=${value}`)
      i++
    } else {
      out.push(arg)
    }
  }
  return out
}

/** node's parser, with values that start with a dash taken as values. */
export function parseCommand<T extends ParseArgsConfig & { args: string[]; strict: true }>(config: T): ReturnType<typeof parseArgs<T>> {
  return parseArgs<T>(Object.assign({}, config, { args: attachValues(config.args, config.options ?? {}) }))
}
