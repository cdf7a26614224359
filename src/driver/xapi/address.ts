import { XapiError } from './types.js'

/**
 * Where a pool is reached: `host[:port]` (HTTPS), or a URL; plain `http://`
 * only when the caller allows it (tests against the simulator).
 */
export function poolOrigin(host: string, allowHttp: boolean): URL {
  const url = new URL(/^[a-z]+:\/\//i.test(host) ? host : `https://${host}`)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) throw new XapiError('INVALID_POOL_ADDRESS', [host])
  return new URL(url.origin)
}

/** The same scheme and port on another host: a bare IPv6 address is bracketed, as a URL needs. */
export function onHost(origin: URL, address: string): URL {
  const url = new URL(origin.origin)
  url.hostname = address.includes(':') && !address.startsWith('[') ? `[${address}]` : address
  return url
}
