import t from 'tap'
import { ConfigError, DEFAULT_TIMEOUT_MS, readConfig } from '../../src/mcp/config.js'

t.test('a token wins over username and password', async (t) => {
  const config = readConfig({ KEEL_URL: 'https://keel.example.net/', KEEL_TOKEN: 'tok', KEEL_USERNAME: 'u', KEEL_PASSWORD: 'p' })
  t.same(config, {
    url: 'https://keel.example.net',
    urlVariable: 'KEEL_URL',
    credentials: { kind: 'token', token: 'tok', variable: 'KEEL_TOKEN' },
    timeoutMs: DEFAULT_TIMEOUT_MS,
  })
})

t.test('Keel names win over XO names, setting by setting', async (t) => {
  const config = readConfig({ XO_URL: 'http://xo', KEEL_USERNAME: 'keel-user', XO_USERNAME: 'xo-user', XO_PASSWORD: 'xo-pass' })
  t.same(config.credentials, { kind: 'password', username: 'keel-user', password: 'xo-pass', variables: 'KEEL_USERNAME and XO_PASSWORD' })
  t.equal(config.urlVariable, 'XO_URL')
})

t.test('empty values count as unset', async (t) => {
  t.throws(() => readConfig({ KEEL_URL: '  ', KEEL_TOKEN: '' }), ConfigError)
})

t.test('the message lists what is missing', async (t) => {
  const error = t.throws(() => readConfig({ KEEL_PASSWORD: 'p' })) as ConfigError
  t.equal(error.exitCode, 2)
  t.equal(
    error.message,
    'missing configuration:\n' +
      '  - KEEL_URL (or XO_URL): the base URL of the service, with its protocol, e.g. https://keel.example.net\n' +
      '  - KEEL_TOKEN (or XO_TOKEN), or both KEEL_USERNAME and KEEL_PASSWORD (or XO_USERNAME and XO_PASSWORD); KEEL_USERNAME is not set',
  )
})

t.test('KEEL_MCP_TIMEOUT_MS', async (t) => {
  t.equal(readConfig({ KEEL_URL: 'http://k', KEEL_TOKEN: 't', KEEL_MCP_TIMEOUT_MS: '1500' }).timeoutMs, 1500)
  t.throws(() => readConfig({ KEEL_URL: 'http://k', KEEL_TOKEN: 't', KEEL_MCP_TIMEOUT_MS: '0' }), /positive whole number/)
  t.throws(() => readConfig({ KEEL_URL: 'http://k', KEEL_TOKEN: 't', KEEL_MCP_TIMEOUT_MS: '1.5' }), /positive whole number/)
})
