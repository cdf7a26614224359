import type { ProxyConfig } from '../config/config.js'
import { ProxySchema, type ProxyRecord } from '../model/proxy.js'
import type { CollectionSource } from './sources.js'

/** The URL as served: a proxy's URL may carry its credentials, which stay in the configuration. */
function publicUrl(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.toString()
}

/** `proxies`: what `[[proxies]]` declares, fixed for the life of the service. */
export function proxySource(proxies: readonly ProxyConfig[]): CollectionSource<ProxyRecord & { readonly [field: string]: unknown }> {
  const records = new Map(
    proxies.map((proxy) => [proxy.id, Object.freeze<ProxyRecord>({ ...proxy, type: 'proxy', url: publicUrl(proxy.url) })]),
  )
  return {
    name: 'proxies',
    type: 'proxy',
    resource: 'proxy',
    schema: ProxySchema,
    list: () => records.values(),
    get: (id) => records.get(id),
  }
}
