import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config/config.js'
import { parseDuration } from '../../src/config/duration.js'

const dir = mkdtempSync(join(tmpdir(), 'keel-config-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string, text: string): string => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

t.test('defaults', async (t) => {
  const config = loadConfig()
  t.same(config.http, { host: '127.0.0.1', port: 8080, maxJsonBodySize: 1024 * 1024, idleTimeout: 5 * 60_000, streamPause: 5, maxHeavyListings: 4, maxQueuedHeavyListings: 64 })
  t.same(config.restApi, {
    maxRamAllocatedPerSseClient: 20,
    maxRamAllocatedForSseClients: 512,
    ssePingInterval: 30_000,
    eventResumeWindow: 300_000,
    eventResumeMinimum: 60_000,
    eventLogMaxEvents: 100_000,
    maxRamAllocatedToEventLog: 64,
    streamCredentialCheckInterval: 10_000,
  })
  t.equal(config.authentication.defaultTokenValidity, 30 * 24 * 3600_000)
  t.equal(config.authentication.maxTokenValidity, parseDuration('0.5 year'))
  t.same(config.log, { level: 'info', maxBufferedBytes: 16 * 1024 * 1024 })
})

t.test('file values, then flags over them', async (t) => {
  const path = file(
    'ok.toml',
    `[http]\nhost = "0.0.0.0"\nport = 9000\n\n[rest-api]\nmaxRamAllocatedPerSseClient = 5\n\n[authentication]\ndefaultTokenValidity = "1 day"\nmaxTokenValidity = "30 days"\n`,
  )
  const config = loadConfig(path, { http: { port: 0 } })
  t.equal(config.http.host, '0.0.0.0')
  t.equal(config.http.port, 0)
  t.equal(config.restApi.maxRamAllocatedPerSseClient, 5)
  t.equal(config.authentication.defaultTokenValidity, 24 * 3600_000)
  t.equal(config.authentication.maxTokenValidity, 30 * 24 * 3600_000)
})

function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

const bad: Array<[string, string, string]> = [
  ['unknown key', '[http]\nhots = "x"\n', 'http.hots'],
  ['unknown section', '[htp]\nhost = "x"\n', 'htp'],
  ['bad port', '[http]\nport = 70000\n', 'http.port'],
  ['port as text', '[http]\nport = "80"\n', 'http.port'],
  ['bad duration', '[authentication]\nmaxTokenValidity = "forever"\n', 'authentication.maxTokenValidity'],
  ['bad idle timeout', '[http]\nidleTimeout = "a while"\n', 'http.idleTimeout'],
  ['bad stream pause', '[http]\nstreamPause = "soon"\n', 'http.streamPause'],
  ['negative heavy listing limit', '[http]\nmaxHeavyListings = -1\n', 'http.maxHeavyListings'],
  ['negative heavy listing line', '[http]\nmaxQueuedHeavyListings = -1\n', 'http.maxQueuedHeavyListings'],
  ['fractional heavy listing line', '[http]\nmaxQueuedHeavyListings = 1.5\n', 'http.maxQueuedHeavyListings'],
  ['bad SSE budget', '[rest-api]\nmaxRamAllocatedPerSseClient = -1\n', 'rest-api.maxRamAllocatedPerSseClient'],
  ['default above max', '[authentication]\ndefaultTokenValidity = "1 year"\n', 'authentication.defaultTokenValidity'],
  ['section not a table', 'http = 5\n', 'http'],
  ['short scrape token', '[metrics]\ntoken = "short"\n', 'metrics.token'],
  ['relative repository root', '[backups]\nrepositoryRoots = ["backups"]\n', 'backups.repositoryRoots'],
  ['no repository root', '[backups]\nrepositoryRoots = []\n', 'backups.repositoryRoots'],
  ['repository root not a list', '[backups]\nrepositoryRoots = "/srv/backups"\n', 'backups.repositoryRoots'],
  ['log bound below 4 KiB', '[log]\nmaxBufferedBytes = 1024\n', 'log.maxBufferedBytes'],
  ['log bound as text', '[log]\nmaxBufferedBytes = "16 MiB"\n', 'log.maxBufferedBytes'],
  ['relative recording folder', '[driver]\nrecord = "recordings"\n', 'driver.record'],
  ['recording cap below 4 KiB', '[driver]\nrecordMaxBytes = 100\n', 'driver.recordMaxBytes'],
  ['bad reconnect delay', '[servers]\nreconnectDelay = "soon"\n', 'servers.reconnectDelay'],
  ['proxies as one table', '[proxies]\nname = "p"\n', 'proxies'],
  ['proxy without url', '[[proxies]]\nname = "p"\n', 'proxies[0].url'],
  ['proxy url not http', '[[proxies]]\nname = "p"\nurl = "ftp://h/"\n', 'proxies[0].url'],
  ['proxy unknown key', '[[proxies]]\nname = "p"\nurl = "https://h/"\nport = 1\n', 'proxies[0].port'],
  ['proxy id not a uuid', '[[proxies]]\nname = "p"\nurl = "https://h/"\nid = "p1"\n', 'proxies[0].id'],
  ['two proxies of one name', '[[proxies]]\nname = "p"\nurl = "https://a/"\n[[proxies]]\nname = "p"\nurl = "https://b/"\n', 'proxies'],
]
for (const [name, text, key] of bad) {
  t.test(`${name} stops the start naming ${key}`, async (t) => {
    const path = file(`${name.replace(/\W/g, '-')}.toml`, text)
    const error = thrown(() => loadConfig(path))
    t.ok(error instanceof ConfigError)
    t.equal((error as ConfigError).key, key)
    t.match((error as ConfigError).message, key)
  })
}

t.test('the idle timeout and the stream pause are durations', async (t) => {
  t.equal(loadConfig(file('idle.toml', '[http]\nidleTimeout = "90 seconds"\n')).http.idleTimeout, 90_000)
  t.equal(loadConfig(file('pause.toml', '[http]\nstreamPause = "2 ms"\n')).http.streamPause, 2)
  t.equal(loadConfig(file('no-pause.toml', '[http]\nstreamPause = 0\n')).http.streamPause, 0)
  t.equal(loadConfig(file('heavy.toml', '[http]\nmaxHeavyListings = 8\n')).http.maxHeavyListings, 8)
  t.equal(loadConfig(file('line.toml', '[http]\nmaxQueuedHeavyListings = 0\n')).http.maxQueuedHeavyListings, 0)
})

t.test('repository roots: unset by default (the data directory decides), else absolute folders, normalised', async (t) => {
  t.equal(loadConfig().backups.repositoryRoots, undefined)
  t.same(loadConfig(file('roots.toml', '[backups]\nrepositoryRoots = ["/srv/backups/", "/mnt/nas/../tape"]\n')).backups.repositoryRoots, ['/srv/backups', '/mnt/tape'])
})

t.test('record mode of the XAPI driver (issue 28): off by default, else an absolute folder and a cap per file', async (t) => {
  t.same(loadConfig().driver, { kind: 'lab', disconnectGrace: 60_000, record: undefined, recordMaxBytes: 256 * 1024 * 1024, transferResponseTimeout: 60_000, transferIdleTimeout: 300_000 })
  const config = loadConfig(file('record.toml', '[driver]\nkind = "xapi"\nrecord = "/srv/keel/../recordings"\nrecordMaxBytes = 1048576\n'))
  t.match(config.driver, { kind: 'xapi', disconnectGrace: 60_000, record: '/srv/recordings', recordMaxBytes: 1048576 })
})

t.test('the XAPI driver’s transfer timeouts (issue 28): a minute to answer, five without a byte moving; durations, 0 for none', async (t) => {
  const config = loadConfig(file('transfers.toml', '[driver]\ntransferResponseTimeout = "20 seconds"\ntransferIdleTimeout = 0\n'))
  t.match(config.driver, { transferResponseTimeout: 20_000, transferIdleTimeout: 0 })
  const error = thrown(() => loadConfig(file('bad-transfers.toml', '[driver]\ntransferIdleTimeout = "soon"\n')))
  t.ok(error instanceof ConfigError)
  t.equal((error as ConfigError).key, 'driver.transferIdleTimeout')
})

t.test('invalid TOML names the file', async (t) => {
  const path = file('broken.toml', '[http\n')
  const error = thrown(() => loadConfig(path))
  t.ok(error instanceof ConfigError)
  t.equal((error as ConfigError).key, path)
})

t.test('durations', async (t) => {
  const table: Array<[unknown, number | undefined]> = [
    ['30 days', 30 * 86400_000],
    ['1 hour', 3600_000],
    ['0.5 year', 0.5 * 365.25 * 86400_000],
    [60000, 60000],
    ['', undefined],
    ['soon', undefined],
    [-5, undefined],
    [Number.NaN, undefined],
    [{}, undefined],
  ]
  for (const [input, expected] of table) t.equal(parseDuration(input), expected, String(input))
})

t.test('[servers] and [[proxies]]', async (t) => {
  const defaults = loadConfig()
  t.same(defaults.servers, { reconnectDelay: 1000, maxReconnectDelay: 60_000 })
  t.same(defaults.proxies, [])
  const path = file(
    'proxies.toml',
    '[servers]\nreconnectDelay = "2 seconds"\n\n[[proxies]]\nname = "proxy-1"\nurl = "https://token@10.0.0.9/"\nversion = "0.29.29"\n\n' +
      '[[proxies]]\nid = "e625ea0c-a876-405a-b838-109d762efe88"\nname = "proxy-2"\nurl = "https://10.0.0.10/"\nvmUuid = "7330139d-288f-2248-5986-d508ea71f12c"\n',
  )
  const config = loadConfig(path)
  t.equal(config.servers.reconnectDelay, 2000)
  t.equal(config.proxies.length, 2)
  t.match(config.proxies[0], { name: 'proxy-1', url: 'https://token@10.0.0.9/', version: '0.29.29', id: /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/ })
  t.equal(loadConfig(path).proxies[0]?.id, config.proxies[0]?.id, 'a derived id is the same at every start')
  t.same(config.proxies[1], {
    id: 'e625ea0c-a876-405a-b838-109d762efe88',
    name: 'proxy-2',
    url: 'https://10.0.0.10/',
    vmUuid: '7330139d-288f-2248-5986-d508ea71f12c',
  })
  t.same(loadConfig(path, { proxies: [] }).proxies, [], 'overrides replace the list')
})
