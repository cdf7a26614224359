import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { browserMissing, go, launchBrowser, newPage, screenshot, signIn, waitForExactText, waitForText, waitUntil } from '../helpers/browser.js'
import { jsonBody, startServer, ADMIN_EMAIL, ADMIN_PASSWORD } from '../helpers/server.js'

const missing = browserMissing()

t.test('the web console in Chromium', { skip: missing ?? false }, async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const ids = await demoIds(server)
  // The event streams' sockets, so that the test can cut them as a network would.
  const streams = new Set<Socket>()
  const resumedFrom: string[] = []
  server.app.server.on('request', (req) => {
    if (req.method !== 'GET' || req.url?.startsWith('/rest/v0/events') !== true) return
    streams.add(req.socket)
    const lastEventId = req.headers['last-event-id']
    if (typeof lastEventId === 'string') resumedFrom.push(lastEventId)
  })
  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const page = await newPage(browser)
  const pageErrors: string[] = []
  page.on('pageerror', (error) => pageErrors.push(String(error)))
  // The policy refuses what the console must never need: an inline script or style, another origin.
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) pageErrors.push(message.text())
  })
  const vmNames = async (filter?: string): Promise<string[]> => {
    const query = filter === undefined ? '' : `&filter=${encodeURIComponent(filter)}`
    const { body } = await server.json<Array<{ name_label: string }>>(`/rest/v0/vms?fields=name_label${query}`)
    return body.map((vm) => vm.name_label).sort()
  }
  const rowNames = (): Promise<string[]> => page.$$eval('.vm-row .name', (links) => links.map((link) => link.textContent ?? '').sort())

  t.test('sign in and see the demo lab', async (t) => {
    await page.goto(`${server.url}/`)
    await page.waitForSelector('form.signin-form')
    await screenshot(page, 'signin')
    await signIn(page, server.url, ADMIN_EMAIL, ADMIN_PASSWORD)
    await waitForText(page, '#count-vms', 'VMs 12')
    await waitForText(page, '#live-status', 'Live')
    await waitForText(page, '#count-hosts', 'Hosts 3')
    await screenshot(page, 'overview')
    t.pass('the overview counts the demo lab')
  })

  t.test('the inventory, filtered with the API syntax; its errors as the API words them', async (t) => {
    await go(page, '#/vms')
    await waitForExactText(page, '#vm-count', '12 VMs')
    t.same(await rowNames(), await vmNames())
    await screenshot(page, 'inventory')
    const [templates] = await page.$$('xpath/.//ul[@id="tree"]//button[text()="Templates"]')
    await templates?.click()
    const { body: templateList } = await server.json<unknown[]>('/rest/v0/vm-templates?fields=id')
    await waitForExactText(page, '#vm-count', `${templateList.length} templates`)
    const [all] = await page.$$('xpath/.//ul[@id="tree"]//button[text()="All VMs"]')
    await all?.click()
    await waitForExactText(page, '#vm-count', '12 VMs')
    await page.type('#filter', 'power_state:Halted')
    await page.click('.search button')
    const halted = await vmNames('power_state:Halted')
    await waitForExactText(page, '#vm-count', `${halted.length} VMs`)
    t.same(await rowNames(), halted)
    await page.evaluate(`document.querySelector('#filter').value = ''`)
    await page.type('#filter', 'name_label:(')
    await page.click('.search button')
    await waitForText(page, '.error', 'FILTER_PARSE_ERROR')
    const { body } = await server.json<{ error: string }>(`/rest/v0/vms?filter=${encodeURIComponent('name_label:(')}`)
    await waitForText(page, '.error', body.error)
    t.pass('the error shown is the API\'s')
  })

  t.test('start a VM and see its state change, pushed by the event stream', async (t) => {
    await go(page, `#/vms/${ids.haltedVm}`)
    await waitForText(page, '.vm-page h2', 'Halted')
    // Set on this document: were the page reloaded, it would be gone.
    await page.evaluate(`document.body.dataset.unreloaded = 'yes'`)
    await page.waitForSelector('#power-actions button')
    const [start] = await page.$$('xpath/.//div[@id="power-actions"]//button[text()="Start"]')
    t.ok(start, 'a Start button')
    await start?.click()
    await waitForText(page, '.vm-page h2', 'Running')
    t.equal(await page.evaluate(`document.body.dataset.unreloaded`), 'yes', 'without reloading')
    const { body } = await server.json<{ power_state: string }>(`/rest/v0/vms/${ids.haltedVm}`)
    t.equal(body.power_state, 'Running')
  })

  t.test('take a snapshot and see it appear', async (t) => {
    const before = await page.$$eval('.snapshot-name', (names) => names.length)
    const [take] = await page.$$('xpath/.//button[text()="Take snapshot"]')
    await take?.click()
    await waitUntil(page, `document.querySelectorAll('.snapshot-name').length === ${before + 1}`)
    const { body } = await server.json<unknown[]>(`/rest/v0/vm-snapshots?fields=id&filter=${encodeURIComponent(`$snapshot_of:${ids.haltedVm}`)}`)
    t.equal(body.length, before + 1)
    await screenshot(page, 'vm')
  })

  t.test('download a disk and compare its bytes', async (t) => {
    const content = randomBytes(1024 * 1024 + 512)
    const created = await server.json<{ id: string }>(`/rest/v0/srs/${ids.defaultSr}/vdis?raw=true&name_label=console-download`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: content,
    })
    t.equal(created.status, 201)
    const folder = mkdtempSync(join(tmpdir(), 'keel-console-download-'))
    t.teardown(() => rmSync(folder, { recursive: true, force: true }))
    const cdp = await page.browserContext().browser().target().createCDPSession()
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allowAndName', downloadPath: folder, eventsEnabled: true, browserContextId: page.browserContext().id })
    const done = new Promise<string>((resolve, reject) => {
      cdp.on('Browser.downloadProgress', (event) => {
        if (event.state === 'completed') resolve(event.guid)
        if (event.state === 'canceled') reject(new Error('download canceled'))
      })
    })
    await go(page, `#/srs/${ids.defaultSr}`)
    const link = await page.waitForSelector(`a.download-raw[data-id="${created.body.id}"]`)
    await link?.click()
    const guid = await done
    t.same(readFileSync(join(folder, guid)), content, 'the bytes downloaded are the disk')

    const upload = async (file: string): Promise<void> => {
      const [chooser] = await Promise.all([page.waitForFileChooser(), page.click(`tr:has(a.download-raw[data-id="${created.body.id}"]) button.upload`)])
      await chooser.accept([file])
    }
    const disk = async (): Promise<Buffer> => Buffer.from(await (await server.request(`/rest/v0/vdis/${created.body.id}.raw`)).arrayBuffer())
    const wrongSize = join(folder, 'short.raw')
    writeFileSync(wrongSize, randomBytes(4096))
    await upload(wrongSize)
    await waitForText(page, '.error', 'DISK_SIZE_MISMATCH')
    t.same(await disk(), content, 'a refused upload changes nothing')
    const replacement = randomBytes(content.length)
    const good = join(folder, 'replacement.raw')
    writeFileSync(good, replacement)
    const answered = page.waitForResponse((response) => response.request().method() === 'PUT' && response.url().endsWith(`/${created.body.id}.raw`))
    await upload(good)
    t.equal((await answered).status(), 204)
    t.same(await disk(), replacement, 'the uploaded bytes are the disk')
  })

  t.test('the other views open', async (t) => {
    for (const [hash, name, text] of [
      ['#/backups', 'backups', 'Backup repositories'],
      ['#/access', 'access', 'Access review'],
      [`#/hosts/${ids.master}`, 'host', 'VMs on this host'],
      [`#/pools/${ids.pool}`, 'pool', 'Hosts'],
    ] as const) {
      await go(page, hash)
      await waitForText(page, 'main h2, main h3', text)
      await screenshot(page, name)
    }
    await page.click('.tasks-toggle')
    await waitForText(page, '#tasks-panel', 'start VM')
    await screenshot(page, 'tasks')
    await page.click('#tasks-panel header button')
    await page.waitForSelector('#tasks-panel', { hidden: true })
    t.pass()
  })

  t.test('bulk: select every VM the filter matches and tag them', async (t) => {
    await go(page, '#/vms')
    await page.evaluate(`document.querySelector('#filter').value = ''`)
    await page.type('#filter', 'power_state:Halted')
    await page.click('.search button')
    const halted = await vmNames('power_state:Halted')
    await waitForExactText(page, '#vm-count', `${halted.length} VMs`)
    const [selectAll] = await page.$$(`xpath/.//button[normalize-space(.)="Select all ${halted.length}"]`)
    t.ok(selectAll, 'offered')
    await selectAll?.click()
    await waitForText(page, '#bulk', `${halted.length} selected`)
    await page.type('#bulk input', 'bulk-tagged')
    const [tag] = await page.$$('xpath/.//div[@id="bulk"]//button[text()="Tag"]')
    await tag?.click()
    await waitUntil(page, `[...document.querySelectorAll('.vm-row .row-tags')].filter((cell) => cell.textContent.includes('bulk-tagged')).length === ${halted.length}`)
    t.same(await vmNames('tags:bulk-tagged'), halted)
    await page.evaluate(`document.querySelector('#filter').value = ''`)
    await page.type('#filter', ' ')
    await page.click('.search button')
    await waitForExactText(page, '#vm-count', '12 VMs')
  })

  t.test('the console keeps working after the event stream is cut, and resumes', async (t) => {
    await go(page, '#/vms')
    await waitForText(page, '#live-status', 'Live')
    t.ok(streams.size > 0, 'the console has an event stream')
    const reconnecting = waitUntil(page, `document.querySelector('#live-status').textContent.includes('Reconnecting')`)
    for (const socket of streams) socket.destroy()
    streams.clear()
    // Changed while the stream is down: it arrives replayed (Last-Event-ID) or live, either way without a reload.
    const renamed = await server.json(`/rest/v0/vms/${ids.runningVm}`, jsonBody({ nameLabel: 'renamed-while-cut' }, 'PATCH'))
    t.equal(renamed.status, 204)
    await reconnecting
    await waitForText(page, '#live-status', 'Live')
    await waitForText(page, '.vm-row .name', 'renamed-while-cut')
    t.match(resumedFrom, [/^\d+$/], 'the stream was resumed with Last-Event-ID')
    const again = await server.json(`/rest/v0/vms/${ids.runningVm}`, jsonBody({ nameLabel: 'renamed-after-resume' }, 'PATCH'))
    t.equal(again.status, 204)
    await waitForText(page, '.vm-row .name', 'renamed-after-resume')
  })

  t.test('a non-administrator with a copied "VMs read only" role sees only what its selector allows, and no action', async (t) => {
    const password = 'reader-password-1'
    const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'reader@example.org', password }))
    t.equal(user.status, 201)
    const templates = await server.json<Array<{ id: string; name: string }>>('/rest/v0/acl-roles?fields=id,name&filter=isTemplate?')
    const template = templates.body.find((role) => role.name === 'VMs read only')
    t.ok(template, 'the template exists')
    const copy = await server.json<{ id: string }>(`/rest/v0/acl-roles/${template?.id}/actions/copy?sync=true`, jsonBody({ name: 'prod VMs read only' }))
    t.equal(copy.status, 201)
    const privileges = await server.json<Array<{ id: string; resource: string }>>(`/rest/v0/acl-roles/${copy.body.id}/privileges?fields=id,resource`)
    for (const privilege of privileges.body.filter((one) => one.resource === 'vm')) {
      const patched = await server.json(`/rest/v0/acl-privileges/${privilege.id}`, jsonBody({ selector: 'tags:prod' }, 'PATCH'))
      t.equal(patched.status, 204)
    }
    t.equal((await server.request(`/rest/v0/acl-roles/${copy.body.id}/users/${user.body.id}`, { method: 'PUT' })).status, 204)

    const reader = await newPage(browser)
    await signIn(reader, server.url, 'reader@example.org', password)
    await go(reader, '#/vms')
    const prod = await vmNames('tags:prod')
    t.ok(prod.length > 0 && prod.length < 12)
    await waitForExactText(reader, '#vm-count', `${prod.length} VMs`)
    t.same(await reader.$$eval('.vm-row .name', (links) => links.map((link) => link.textContent ?? '').sort()), prod)
    // The event stream stays open; every other request (the acl-check decisions) has been answered.
    await reader.waitForNetworkIdle({ concurrency: 1 })
    t.equal(await reader.$$eval('.vm-row input[type=checkbox]', (boxes) => boxes.length), 0, 'nothing to select for bulk actions')
    t.notMatch(await reader.$eval('.list-head', (head) => head.textContent ?? ''), 'Select all')
    await screenshot(reader, 'inventory-read-only')
    const { body } = await server.json<Array<{ id: string }>>(`/rest/v0/vms?fields=id&filter=${encodeURIComponent('tags:prod power_state:Running')}`)
    const vmId = body[0]?.id ?? ''
    await go(reader, `#/vms/${vmId}`)
    await reader.waitForSelector('.vm-page h2')
    // The event stream stays open; every other request (the acl-check decisions) has been answered.
    await reader.waitForNetworkIdle({ concurrency: 1 })
    const buttons = await reader.$$eval('main button', (all) => all.map((button) => button.textContent ?? ''))
    t.same(buttons, [], 'no action button on the VM page')
    t.equal(await reader.$$eval('.tag-input', (inputs) => inputs.length), 0, 'no tag editing')
    await screenshot(reader, 'vm-read-only')
    await reader.browserContext().close()
  })

  t.test('a form on another origin posting with the cookie is refused, and nothing changes', async (t) => {
    // Another port of the same host: the same site, so the SameSite=Lax cookie goes along, but not the same origin.
    const action = `${server.url}/rest/v0/vms/${ids.runningVm}/actions/hard_shutdown`
    const attacker = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(`<form method="post" action="${action}"><button id="go">win a prize</button></form>`)
    })
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve))
    t.teardown(() => attacker.close())
    const before = await server.json<{ power_state: string }>(`/rest/v0/vms/${ids.runningVm}?fields=power_state`)
    // The administrator's page, signed in: its cookie is the one a forged form would ride on.
    await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`)
    const [answer] = await Promise.all([page.waitForNavigation(), page.click('#go')])
    t.equal(answer?.status(), 403)
    t.match(await answer?.text(), /CROSS_SITE_REQUEST/)
    const after = await server.json<{ power_state: string }>(`/rest/v0/vms/${ids.runningVm}?fields=power_state`)
    t.equal(after.body.power_state, before.body.power_state, 'the VM is as it was')
  })

  t.test('no script error and nothing the policy refused on the way', async (t) => {
    t.same(pageErrors, [])
  })
})

if (missing !== undefined) process.stderr.write(`test/console/browser: skipped: ${missing}\n`)
