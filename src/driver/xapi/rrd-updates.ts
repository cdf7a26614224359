import { DOMParser, onErrorStopParsing, type Element } from '@xmldom/xmldom'
import type { StatsTree, XapiStats } from '../types.js'
import { pathOfDataSource, type RrdName } from '../../stats/rrd-names.js'
import { XapiError } from './types.js'

const malformed = (why: string): XapiError => new XapiError('RRD_UPDATES_MALFORMED', [why])

const childElements = (parent: Element, tag: string): Element[] => {
  const found: Element[] = []
  for (let node = parent.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === node.ELEMENT_NODE && (node as Element).tagName === tag) found.push(node as Element)
  }
  return found
}

const child = (parent: Element, tag: string): Element => {
  const [found] = childElements(parent, tag)
  if (found === undefined) throw malformed(`no <${tag}> in <${parent.tagName}>`)
  return found
}

const integer = (parent: Element, tag: string): number => {
  const value = Number(child(parent, tag).textContent)
  if (!Number.isInteger(value)) throw malformed(`<${tag}> is not an integer`)
  return value
}

/**
 * One object's statistics from the `xport` document of `/rrd_updates`: the
 * columns whose legend (`AVERAGE:vm:<uuid>:cpu0`) names `type` and `uuid`,
 * each data source at its xo-server path and scale, oldest point first, NaN
 * as null. A data source xo-server does not read is left out.
 */
export function statsOfRrdUpdates(xml: string, type: 'host' | 'vm', uuid: string, names: readonly RrdName[]): XapiStats {
  let root: Element | null
  try {
    root = new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml').documentElement
  } catch (error) {
    throw malformed(error instanceof Error ? error.message : String(error))
  }
  if (root?.tagName !== 'xport') throw malformed('the root element is not <xport>')
  const meta = child(root, 'meta')
  const step = integer(meta, 'step')
  const end = integer(meta, 'end')
  const rows = childElements(child(root, 'data'), 'row')
    .map((row) => ({ time: integer(row, 't'), values: childElements(row, 'v').map((v) => Number(v.textContent)) }))
    // XAPI writes the newest row first.
    .sort((a, b) => a.time - b.time)
  const stats: StatsTree = {}
  childElements(child(meta, 'legend'), 'entry').forEach((entry, column) => {
    const [, entryType, entryUuid, dataSource] = /^[A-Z]+:([^:]+):([^:]+):(.+)$/.exec(entry.textContent ?? '') ?? []
    if (entryType !== type || entryUuid !== uuid || dataSource === undefined) return
    const found = pathOfDataSource(names, dataSource)
    if (found === undefined) return
    let tree = stats
    for (const part of found.path.slice(0, -1)) {
      const next = tree[part]
      tree = next === undefined || Array.isArray(next) ? (tree[part] = {}) : next
    }
    tree[found.path.at(-1) ?? dataSource] = rows.map(({ values }) => {
      const value = values[column]
      return value === undefined || Number.isNaN(value) ? null : value * found.scale
    })
  })
  return { endTimestamp: end, interval: step, stats }
}
