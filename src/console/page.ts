import { createHash } from 'node:crypto'
import type { AssetTable } from './assets.js'

export const ASSET_BASE = '/console'

const escapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => escapes[char] ?? char)

export const assetPath = (table: AssetTable, name: string): string => `${ASSET_BASE}/${table.version}/${name}`

/** The security headers of every console response: its own scripts only, no framing, no sniffing. */
export interface PageHeaders {
  readonly 'Content-Security-Policy': string
  readonly 'X-Content-Type-Options': 'nosniff'
  readonly 'Referrer-Policy': 'same-origin'
}

/**
 * `script-src 'self'` allows no inline script, and an import map can be neither external nor
 * injected by a module: it is inline, allowed by its own SHA-256 in the policy and by nothing else.
 */
function policy(scriptHashes: readonly string[]): string {
  const scripts = ["'self'", ...scriptHashes.map((hash) => `'sha256-${hash}'`)].join(' ')
  return [
    "default-src 'none'",
    `script-src ${scripts}`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

const headersWith = (scriptHashes: readonly string[]): PageHeaders => ({
  'Content-Security-Policy': policy(scriptHashes),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
})

/** Scripts and styles served as files need no inline allowance. */
export const assetHeaders = headersWith([])

const head = (table: AssetTable, title: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${assetPath(table, 'icon.svg')}">
<link rel="stylesheet" href="${assetPath(table, 'console.css')}">`

export interface Page {
  readonly html: Buffer
  readonly headers: PageHeaders
  readonly etag: string
}

function page(html: string, scriptHashes: readonly string[]): Page {
  const bytes = Buffer.from(html)
  return { html: bytes, headers: headersWith(scriptHashes), etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"` }
}

/** The application's page: the import map names the libraries' versioned files. */
export function appPage(table: AssetTable): Page {
  const importMap = JSON.stringify({
    imports: {
      preact: assetPath(table, 'preact.mjs'),
      'preact/hooks': assetPath(table, 'hooks.mjs'),
      htm: assetPath(table, 'htm.mjs'),
    },
  })
  const hash = createHash('sha256').update(importMap).digest('base64')
  const preloads = ['preact.mjs', 'hooks.mjs', 'htm.mjs', 'api.js', 'live.js']
    .map((name) => `<link rel="modulepreload" href="${assetPath(table, name)}">`)
    .join('\n')
  const html = `${head(table, 'Keel')}
<script type="importmap">${importMap}</script>
${preloads}
<script type="module" src="${assetPath(table, 'main.js')}"></script>
</head>
<body>
<div id="app"><p class="loading">Loading…</p></div>
</body>
</html>
`
  return page(html, [hash])
}

/** The sign-in page is a plain form: it works without script, and carries none. */
export function signInPage(table: AssetTable, options: { redirect: string; failed: boolean }): Page {
  const html = `${head(table, 'Sign in · Keel')}
</head>
<body class="signin">
<form class="signin-form" method="post" action="/signin">
<h1>Keel</h1>
${options.failed ? '<p class="error" role="alert">Invalid email or password.</p>' : ''}
<label>Email <input name="email" type="email" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<input type="hidden" name="redirect" value="${escapeHtml(options.redirect)}">
<button type="submit">Sign in</button>
</form>
</body>
</html>
`
  return page(html, [])
}

/**
 * What a link to `/signout` (XO 6's menu) lands on: a form that signs out when sent. A GET that
 * signed out would let any other site sign a user out with a link.
 */
export function signOutPage(table: AssetTable): Page {
  const html = `${head(table, 'Sign out · Keel')}
</head>
<body class="signin">
<form class="signin-form" method="post" action="/signout">
<h1>Keel</h1>
<button type="submit" autofocus>Sign out</button>
</form>
</body>
</html>
`
  return page(html, [])
}
