// The web console in headless Chromium on a large generated lab: time from navigation to the first
// VM rows painted and to the whole inventory loaded, bytes moved on a first and a repeat visit, and
// the console's JavaScript and CSS gzipped. Keel runs as the other benchmarks run it (serve-keel.js).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'puppeteer-core'
import { loadAssets } from '../src/console/assets.js'
import { browserMissing, launchBrowser, newPage, signIn } from '../test/helpers/browser.js'
import { startServer } from './keel-client.js'

export interface ConsoleBenchOptions {
  readonly vms: number
  readonly pin: boolean
}

export const consoleBenchOptions = (pin: boolean): ConsoleBenchOptions => ({ vms: Number(process.env['BENCH_CONSOLE_VMS'] ?? 50_000), pin })

interface Visit {
  /** ms from navigation start to the frame after the first VM row was added */
  readonly firstRows: number
  /** ms from navigation start to the frame after the count showed every VM, listing complete */
  readonly wholeInventory: number
  readonly consoleBytes: number
  readonly apiBytes: number
}

// Installed before the page's own scripts: watches the inventory appear, in the page's own clock.
const marks = (vms: number): string => `(() => {
  const marks = (window.__benchMarks = {})
  const frame = (name) => requestAnimationFrame(() => { marks[name] ??= performance.now() })
  new MutationObserver(() => {
    if (marks.firstRowsSeen === undefined && document.querySelector('.vm-row')) { marks.firstRowsSeen = true; frame('firstRows') }
    if (marks.allSeen === undefined && document.querySelector('#vm-count')?.textContent === '${vms} VMs') { marks.allSeen = true; frame('wholeInventory') }
  }).observe(document, { childList: true, subtree: true, characterData: true })
})()`

/** One visit of the inventory: its marks, and the bytes received (headers and bodies as sent) for the console's files and for the API. */
async function visit(page: Page, url: string): Promise<Visit> {
  const cdp = await page.createCDPSession()
  await cdp.send('Network.enable')
  const urls = new Map<string, string>()
  let consoleBytes = 0
  let apiBytes = 0
  cdp.on('Network.requestWillBeSent', (event) => urls.set(event.requestId, event.request.url))
  cdp.on('Network.loadingFinished', (event) => {
    const path = new URL(urls.get(event.requestId) ?? url).pathname
    if (path.startsWith('/rest/')) apiBytes += event.encodedDataLength
    else consoleBytes += event.encodedDataLength
  })
  // From another document: a navigation that only changes the hash would load nothing.
  await page.goto('about:blank')
  await page.goto(`${url}/#/vms`)
  await page.waitForFunction(`window.__benchMarks?.wholeInventory !== undefined`, { timeout: 600_000, polling: 100 })
  const found = (await page.evaluate('window.__benchMarks')) as { firstRows: number; wholeInventory: number }
  await cdp.detach()
  return { firstRows: found.firstRows, wholeInventory: found.wholeInventory, consoleBytes, apiBytes }
}

const kB = (bytes: number): string => (bytes / 1024).toFixed(1)

export async function consoleBench(options: ConsoleBenchOptions): Promise<string> {
  const missing = browserMissing()
  if (missing !== undefined) return `Console: skipped, ${missing}\n`
  const table = loadAssets()
  let scripts = 0
  let firstVisitScripts = 0
  for (const asset of table.byName.values()) {
    if (!/\.(m?js|css)$/.test(asset.name)) continue
    scripts += asset.gzip.length
    // uPlot loads with the first chart, not with the inventory.
    if (!asset.name.startsWith('uplot')) firstVisitScripts += asset.gzip.length
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-console-'))
  const keel = await startServer('serve-keel.js', [dataDir, String(options.vms), String(Math.max(3, Math.round(options.vms / 200)))], options.pin, 'ignore')
  const browser = await launchBrowser()
  try {
    const page = await newPage(browser)
    await signIn(page, keel.url, 'admin@admin.net', 'bench-password')
    await page.evaluateOnNewDocument(marks(options.vms))
    // Sign-in loaded the page and its files: the first visit is measured from an empty cache.
    const cdp = await page.createCDPSession()
    await cdp.send('Network.clearBrowserCache')
    await cdp.detach()
    const first = await visit(page, keel.url)
    const repeat = await visit(page, keel.url)
    const row = (name: string, result: Visit): string =>
      `| ${name} | ${result.firstRows.toFixed(0)} | ${result.wholeInventory.toFixed(0)} | ${kB(result.consoleBytes)} | ${kB(result.apiBytes)} |`
    return [
      `Web console, ${options.vms} generated VMs, headless Chromium (bench/console.ts):`,
      '',
      '| visit | ms to first VM rows painted | ms to whole inventory | console KiB moved | API KiB moved |',
      '|---|---|---|---|---|',
      row('first (empty cache)', first),
      row('repeat (cached)', repeat),
      '',
      `JavaScript and CSS gzipped: ${kB(firstVisitScripts)} KiB loaded by the first visit, ${kB(scripts)} KiB with uPlot (goal: under 60 KB).`,
      '',
    ].join('\n')
  } finally {
    await browser.close()
    keel.child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}
