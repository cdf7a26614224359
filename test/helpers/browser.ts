import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { packageRoot } from '../../src/paths.js'

/** Debian's chromium, which .ci/run installs; `KEEL_CHROMIUM` names another. */
export const chromiumPath = process.env['KEEL_CHROMIUM'] ?? '/usr/bin/chromium'

export const screenshotDir = join(packageRoot, 'test-output', 'screenshots')

/**
 * Why the browser tests cannot run here, or undefined when they can. In CI a missing browser
 * is a failure, never a skip: .ci/run installs it.
 */
export function browserMissing(): string | undefined {
  if (existsSync(chromiumPath)) return undefined
  const reason = `chromium is not at ${chromiumPath}: install Debian's chromium (apt-get install chromium, as .ci/run does) or set KEEL_CHROMIUM`
  if (process.env['CI'] !== undefined && process.env['CI'] !== '') throw new Error(reason)
  return reason
}

export async function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath,
    headless: true,
    // Tests run as root in CI, where chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  })
}

export async function newPage(browser: Browser): Promise<Page> {
  const context = await browser.createBrowserContext()
  const page = await context.newPage()
  await page.setViewport({ width: 1440, height: 900 })
  return page
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: join(screenshotDir, `${name}.png`) as `${string}.png` })
}

// Code run in the page is given as text: the tests compile without the DOM's types.

/**
 * Waits until the page's expression is true, checked every 50 ms: puppeteer's 'mutation' polling
 * does not see a text node's data change, which is how Preact updates a text in place.
 */
export async function waitUntil(page: Page, expression: string): Promise<void> {
  await page.waitForFunction(expression, { polling: 50, timeout: 60_000 })
}

/** Waits until an element's text contains `text`. */
export async function waitForText(page: Page, selector: string, text: string): Promise<void> {
  await waitUntil(page, `[...document.querySelectorAll(${JSON.stringify(selector)})].some((element) => element.textContent.includes(${JSON.stringify(text)}))`)
}

/** Waits until the first such element's whole text is `text` (a count: "2 VMs" is in "12 VMs"). */
export async function waitForExactText(page: Page, selector: string, text: string): Promise<void> {
  await waitUntil(page, `document.querySelector(${JSON.stringify(selector)})?.textContent === ${JSON.stringify(text)}`)
}

/** Goes to a view of the console without loading the page again. */
export async function go(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`)
}

export async function signIn(page: Page, url: string, email: string, password: string): Promise<void> {
  await page.goto(`${url}/`)
  await page.waitForSelector('input[name=email]')
  await page.type('input[name=email]', email)
  await page.type('input[name=password]', password)
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
}
