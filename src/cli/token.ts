import { CliError } from './errors.js'
import { promptHidden } from './prompt.js'
import { parseCommand } from './args.js'

/** `keel token create`: logs in with a password and prints a new token, the helper spec 1 mentions. */
export async function createToken(args: string[]): Promise<void> {
  const { values } = parseCommand({
    args,
    options: {
      url: { type: 'string' },
      user: { type: 'string' },
      description: { type: 'string' },
      'expires-in': { type: 'string' },
    },
    strict: true,
  })
  if (values.url === undefined || values.user === undefined) throw new CliError('token create needs --url and --user', 2)
  const base = new URL(values.url)
  const password = process.env['KEEL_PASSWORD'] ?? (await promptHidden(`Password for ${values.user}: `))
  const body: Record<string, string> = {}
  if (values.description !== undefined) body['description'] = values.description
  if (values['expires-in'] !== undefined) body['expiresIn'] = values['expires-in']
  const response = await fetch(new URL('/rest/v0/users/me/authentication_tokens', base), {
    method: 'POST',
    headers: {
      Authorization: 'Basic ' + Buffer.from(`${values.user}:${password}`).toString('base64'),
      'Content-Type': 'application/json',
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  if (response.status !== 201) {
    let message = text
    try {
      message = (JSON.parse(text) as { error?: string }).error ?? text
    } catch {
      // not JSON: show the raw text
    }
    throw new CliError(`token creation failed (${response.status}): ${message}`)
  }
  const { token } = JSON.parse(text) as { token: { id: string } }
  process.stdout.write(token.id + '\n')
}
