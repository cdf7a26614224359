import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'puppeteer-core'
import { launchBrowser, newPage } from '../test/helpers/browser.js'

/**
 * Visits every page of XO 6 served by a running Keel (`[http] xo6Root`) as an administrator and
 * prints each failed request, each error status and each error the page logs, by page; it exits 1
 * when there is any. Not a test: CI has no build of XO 6 (docs/xo6.md says how to make one).
 *
 *   node dist/bench/xo6-walk.js http://127.0.0.1:8080 admin@admin.net PASSWORD [screenshot folder]
 */

interface Problem {
  readonly page: string
  readonly what: string
}

const [url = '', email = '', password = '', shots] = process.argv.slice(2)
if (url === '' || email === '' || password === '') {
  process.stderr.write('usage: xo6-walk URL EMAIL PASSWORD [SCREENSHOT_FOLDER]\n')
  process.exit(2)
}

const problems: Problem[] = []
let current = 'sign-in'

function watch(page: Page): void {
  page.on('response', (response) => {
    const status = response.status()
    // Redirects (to sign in) and 304s (revalidations) are the protocol working.
    if (status >= 400) problems.push({ page: current, what: `${status} ${response.request().method()} ${response.url().replace(url, '')}` })
  })
  page.on('requestfailed', (request) => {
    // Chrome reports a 204 fetch as aborted after its response: it was answered.
    if (request.response()?.ok() === true) return
    const reason = request.failure()?.errorText ?? 'failed'
    // A page left while its event stream is open aborts it: that is the walk, not a failure.
    if (reason === 'net::ERR_ABORTED' && request.url().includes('/rest/v0/events')) return
    problems.push({ page: current, what: `${reason} ${request.method()} ${request.url().replace(url, '')}` })
  })
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push({ page: current, what: `console: ${message.text().slice(0, 300)}` })
  })
  page.on('pageerror', (error) => problems.push({ page: current, what: `page error: ${String(error).slice(0, 300)}` }))
}

/** Lets a page load its data: no more than its event stream open for 1.5 s, 30 s at most. */
async function settle(page: Page): Promise<void> {
  await page.waitForNetworkIdle({ idleTime: 1500, concurrency: 1, timeout: 30_000 }).catch(() => problems.push({ page: current, what: 'still loading after 30 s' }))
}

async function visit(page: Page, route: string, shot?: string): Promise<void> {
  current = route
  await page.evaluate(`location.hash = ${JSON.stringify(`#${route}`)}`)
  await settle(page)
  if (shot !== undefined && shots !== undefined) {
    mkdirSync(shots, { recursive: true })
    await page.screenshot({ path: join(shots, `${shot}.png`) as `${string}.png` })
  }
  process.stdout.write(`visited ${route}\n`)
}

/** Clicks the last visible element matching `selector` whose own text is `text` (menus open on top). */
async function clickText(page: Page, selector: string, text: string): Promise<void> {
  const found = `[...document.querySelectorAll(${JSON.stringify(selector)})].filter((element) => element.offsetParent !== null && element.textContent.trim() === ${JSON.stringify(text)}).pop()`
  await page.waitForFunction(found, { polling: 100, timeout: 15_000 })
  await page.evaluate(`${found}.click()`)
}

/** Waits until the page shows `text` somewhere: the effect of an action, seen live. */
async function shows(page: Page, text: string): Promise<void> {
  await page.waitForFunction(`document.body.innerText.includes(${JSON.stringify(text)})`, { polling: 100, timeout: 60_000 })
}

async function vmField(page: Page, vm: string, field: string): Promise<unknown> {
  return page.evaluate(`fetch('/rest/v0/vms/${vm}').then((response) => response.json()).then((vm) => vm[${JSON.stringify(field)}])`)
}

/**
 * Shutdown, start and snapshot from XO 6's own menus on a running VM, each checked on the page and
 * in the API; a tag added through the API is checked on the page: XO 6 has no tag editor yet.
 */
async function act(page: Page, vm: string): Promise<void> {
  const step = async (name: string, run: () => Promise<void>): Promise<void> => {
    current = `action: ${name}`
    try {
      await run()
      process.stdout.write(`action ${name}: took effect\n`)
    } catch (error) {
      problems.push({ page: current, what: `did not take effect: ${String(error).slice(0, 200)}` })
    }
  }
  await visit(page, `/vm/${vm}/dashboard`)
  await step('shutdown', async () => {
    await clickText(page, '.ui-head-bar .actions button', 'Change state')
    await clickText(page, '.menu-item > *', 'Shutdown')
    await clickText(page, '[role=dialog] button', 'Shutdown VM')
    await shows(page, 'Halted')
    if ((await vmField(page, vm, 'power_state')) !== 'Halted') throw new Error('the API does not say Halted')
  })
  await step('start', async () => {
    await clickText(page, '.ui-head-bar .actions button', 'Change state')
    await clickText(page, '.menu-item > *', 'Start')
    await shows(page, 'Running')
    if ((await vmField(page, vm, 'power_state')) !== 'Running') throw new Error('the API does not say Running')
  })
  await step('snapshot', async () => {
    const before = ((await vmField(page, vm, 'snapshots')) as string[]).length
    await visit(page, `/vm/${vm}/snapshots`)
    await clickText(page, '.ui-head-bar .actions .ui-button-icon', '')
    await clickText(page, '.menu-item > *', 'Snapshot')
    await page.waitForFunction(`fetch('/rest/v0/vms/${vm}').then((response) => response.json()).then((vm) => vm.snapshots.length > ${before})`, { polling: 500, timeout: 60_000 })
    await settle(page)
  })
  await step('tag', async () => {
    await visit(page, `/vm/${vm}/dashboard`)
    const tag = `xo6-walk-${Date.now().toString(36)}`
    await page.evaluate(`fetch('/rest/v0/vms/${vm}/tags/${tag}', { method: 'PUT' }).then((response) => { if (!response.ok) throw new Error(response.status) })`)
    await shows(page, tag)
  })
}

async function firstId(page: Page, collection: string, filter = ''): Promise<string | undefined> {
  const ids = (await page.evaluate(`fetch('/rest/v0/${collection}?limit=1${filter}').then((response) => response.json())`)) as string[]
  return ids[0]?.split('/').pop()
}

async function main(): Promise<void> {
  const browser = await launchBrowser()
  try {
    const page = await newPage(browser)
    watch(page)
    await page.goto(`${url}/v6/`)
    await page.waitForSelector('input[name=email]')
    await page.type('input[name=email]', email)
    await page.type('input[name=password]', password)
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    if (!page.url().startsWith(`${url}/v6/`)) throw new Error(`signed in to ${page.url()}, not back to /v6/`)
    current = '/'
    await settle(page)
    const pool = await firstId(page, 'pools')
    const host = await firstId(page, 'hosts')
    const vm = await firstId(page, 'vms', '&filter=power_state:Running')
    const vdi = await firstId(page, 'vdis')
    const vif = await firstId(page, 'vifs')
    const backup = await firstId(page, 'backup-jobs')
    const routes: Array<readonly [string, string?]> = [
      ['/dashboard', 'site-dashboard'],
      ['/pools'],
      ['/hosts'],
      ['/vms', 'vms'],
      ['/backups'],
      ['/tasks'],
      ['/settings'],
      ['/admin/user-management/users'],
      ...(pool === undefined ? [] : ['dashboard', 'hosts', 'vms', 'storage', 'networks', 'tasks', 'system', 'traffic-rules'].map((tab) => [`/pool/${pool}/${tab}`, tab === 'dashboard' ? 'pool-dashboard' : undefined] as const)),
      ...(host === undefined ? [] : ['dashboard', 'console', 'vms', 'storage', 'networks', 'tasks', 'system'].map((tab) => [`/host/${host}/${tab}`, tab === 'dashboard' ? 'host-dashboard' : undefined] as const)),
      ...(vm === undefined ? [] : ['dashboard', 'console', 'vdis', 'networks', 'snapshots', 'backups', 'tasks', 'system'].map((tab) => [`/vm/${vm}/${tab}`, tab === 'dashboard' ? 'vm-dashboard' : tab === 'console' ? 'vm-console' : undefined] as const)),
      ...(vdi === undefined ? [] : [[`/vdi/${vdi}/general`] as const]),
      ...(vif === undefined ? [] : [[`/vif/${vif}/general`] as const, [`/vif/${vif}/traffic-rules`] as const]),
      ...(backup === undefined ? [] : ['configuration', 'runs', 'backed-up-vms', 'targets'].map((tab) => [`/backup/${backup}/${tab}`] as const)),
      ['/vm/new'],
      ['/pool/connect'],
    ]
    for (const [route, shot] of routes) await visit(page, route, shot)
    if (vm !== undefined) await act(page, vm)
    // XO 6's menu signs out by going to /signout.
    current = 'sign-out'
    await page.goto(`${url}/signout`)
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    await page.goto(`${url}/v6/`)
    if (!page.url().startsWith(`${url}/signin`)) problems.push({ page: current, what: `still signed in: ${page.url()}` })
    else process.stdout.write('signed out\n')
  } finally {
    await browser.close()
  }
  for (const problem of problems) process.stdout.write(`${problem.page}\t${problem.what}\n`)
  process.stdout.write(`${problems.length} problems\n`)
  if (problems.length > 0) process.exitCode = 1
}

await main()
