import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, normalize, sep } from 'node:path'
import t from 'tap'
import { defineRoute } from '../../src/http/route.js'
import { browserMissing, launchBrowser, newPage, screenshot, signIn, waitUntil } from '../helpers/browser.js'
import { demoIds } from '../helpers/demo-lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.js'

const missing = browserMissing()

/** noVNC's own files, as its package ships them: `core/rfb.js` is an ES module importing the rest. */
const novncRoot = dirname(dirname(createRequire(import.meta.url).resolve('@novnc/novnc')))
const PREFIX = '/novnc-test/'

/** The smallest page that runs noVNC's RFB client against a console, as the reference's web UI does. */
const page = `<!doctype html>
<html><body><div id="screen"></div><script type="module">
import RFB from './core/rfb.js'
const id = new URLSearchParams(location.search).get('id')
const state = (window.__console = { connected: false, disconnected: undefined })
const rfb = new RFB(document.getElementById('screen'), 'ws://' + location.host + '/api/consoles/' + id)
rfb.addEventListener('connect', () => { state.connected = true; rfb.focus() })
rfb.addEventListener('disconnect', (event) => { state.disconnected = event.detail })
</script></body></html>`

/** How many pixels of a glyph's cell (8×16, the underline cursor's rows apart) are lit on noVNC's canvas. */
const litPixels = (column: number, row: number): string => `(() => {
  const canvas = document.querySelector('#screen canvas')
  const data = canvas.getContext('2d').getImageData(${column * 8}, ${row * 16}, 8, 13).data
  let lit = 0
  for (let index = 0; index < data.length; index += 4) if (data[index] > 0x80) lit++
  return lit
})()`

const novncFiles = defineRoute({
  method: 'GET',
  path: `${PREFIX}*`,
  operationId: 'novncTest',
  summary: 'noVNC and a page running it, for this test',
  tags: ['test'],
  hidden: true,
  access: { public: true },
  responses: {},
  handler: ({ req, res }) => {
    const path = new URL(req.url ?? '/', 'http://keel').pathname.slice(PREFIX.length)
    const file = normalize(join(novncRoot, path))
    if (path === 'page.html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(page)
    } else if (file.startsWith(novncRoot + sep) && file.endsWith('.js')) {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file))
    } else {
      res.writeHead(404).end()
    }
  },
})

t.test('noVNC, the reference\'s console client, in Chromium', { skip: missing ?? false }, async (t) => {
  // noVNC and the page are served at Keel's own origin, as a web UI served beside the API would be.
  const server = await startServer({ app: { extraRoutes: [novncFiles] } })
  t.teardown(() => server.close())
  const ids = await demoIds(server)
  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const tab = await newPage(browser)
  const pageErrors: string[] = []
  tab.on('pageerror', (error) => pageErrors.push(String(error)))
  await signIn(tab, server.url, ADMIN_EMAIL, ADMIN_PASSWORD)

  await tab.goto(`${server.url}${PREFIX}page.html?id=${ids.runningVm}`)
  await waitUntil(tab, 'window.__console?.connected === true')
  // Row 7 is the login prompt, the first free cell after "web-01 login: ".
  const column = 'web-01 login: '.length
  await waitUntil(tab, `${litPixels(0, 7)} > 0`)
  t.equal(await tab.evaluate(litPixels(column, 7)), 0, 'nothing typed yet')
  await tab.keyboard.type('k')
  await waitUntil(tab, `${litPixels(column, 7)} > 0`)
  t.pass('the key typed in noVNC shows on its canvas')
  await screenshot(tab, 'novnc-console')
  t.same(pageErrors, [])

  const stop = await server.request(`/rest/v0/vms/${ids.runningVm}/actions/hard_shutdown`, { method: 'POST' })
  t.equal(stop.status, 202)
  await waitUntil(tab, 'window.__console.disconnected !== undefined')
  t.same(await tab.evaluate('window.__console.disconnected'), { clean: true }, 'noVNC sees a clean close when the VM stops')
})
