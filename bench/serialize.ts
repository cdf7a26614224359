import fastJson from 'fast-json-stringify'
import type { XoRecord } from '../src/driver/types.js'
import { JsonCache } from '../src/http/json-cache.js'
import { recordSchemas } from '../src/model/records.js'
import { parseFields, pick } from '../src/api/projection.js'

export interface SerializeResult {
  readonly name: string
  readonly microsPerOp: number
}

function time(name: string, iterations: number, fn: () => unknown): SerializeResult {
  for (let i = 0; i < Math.min(3, iterations); i++) fn()
  const start = process.hrtime.bigint()
  for (let i = 0; i < iterations; i++) fn()
  const micros = Number(process.hrtime.bigint() - start) / 1000 / iterations
  return { name, microsPerOp: micros }
}

/**
 * Whole-listing serialization of every VM, four ways: which one the read API
 * uses is decided here, in the same run, not by folklore.
 */
export function serializationBench(vms: XoRecord[], iterations = 20): SerializeResult[] {
  const schema = recordSchemas['VM']
  if (schema === undefined) throw new Error('no VM schema')
  const fjsArray = fastJson({ type: 'array', items: JSON.parse(JSON.stringify(schema)) as object })
  const paths = parseFields('name_label,power_state,$container')
  const fjsPicked = fastJson({
    type: 'array',
    items: {
      type: 'object',
      properties: { name_label: { type: 'string' }, power_state: { type: 'string' }, $container: { type: 'string' } },
    },
  })
  const cache = new JsonCache(512 * 1024 * 1024)
  const comma = Buffer.from(',')
  const joinCached = (): Buffer => {
    const parts: Buffer[] = [Buffer.from('[')]
    for (const vm of vms) parts.push(cache.bytes(vm, 'record', (record) => JSON.stringify(record)), comma)
    parts[parts.length - 1] = Buffer.from(']')
    return Buffer.concat(parts)
  }
  return [
    time('JSON.stringify, whole records', iterations, () => JSON.stringify(vms)),
    time('fast-json-stringify, whole records', iterations, () => fjsArray(vms)),
    time('cached bytes joined, whole records', iterations, joinCached),
    time('pick 3 fields + JSON.stringify', iterations, () => JSON.stringify(vms.map((vm) => pick(vm, paths)))),
    time('fast-json-stringify, 3-field schema', iterations, () => fjsPicked(vms)),
  ]
}
