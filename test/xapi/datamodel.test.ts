import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../src/paths.js'
import { defaultOf, enumValues, typeKind, xapiClass, xapiClassOfEvent } from '../../src/xapi/datamodel/index.js'
import { parseDefault, renderDatamodel } from '../../src/xapi/datamodel/render.js'
import { XmlRpcDouble } from '../../src/xapi/xml-rpc.js'

const SOURCE = join(packageRoot, '..', 'shared', 'xapi', 'xenapi.json')

t.test('generated.ts is what the generator makes of the datamodel in ../shared', { skip: existsSync(SOURCE) ? false : `no ${SOURCE} here` }, async (t) => {
  const rendered = renderDatamodel(JSON.parse(readFileSync(SOURCE, 'utf8')) as Parameters<typeof renderDatamodel>[0])
  t.ok(rendered === readFileSync(join(packageRoot, 'src', 'xapi', 'datamodel', 'generated.ts'), 'utf8'), 'regenerate with: node dist/src/xapi/datamodel/generate.js')
})

t.test('the datamodel literals parse by type', async (t) => {
  t.equal(parseDefault('""', 'string'), '')
  t.equal(parseDefault('"0:0"', 'string'), '0:0')
  t.equal(parseDefault('1.', 'float'), 1)
  t.equal(parseDefault('8', 'int'), 8)
  t.equal(parseDefault('true', 'bool'), true)
  t.equal(parseDefault('Null', 'VM ref'), 'OpaqueRef:NULL')
  t.same(parseDefault('{0}', 'int set'), [0])
  t.same(parseDefault('{"address" -> "localhost", "port" -> "27000"}', '(string -> string) map'), { address: 'localhost', port: '27000' })
})

t.test('classes, fields, messages and defaults as the simulator reads them', async (t) => {
  const vm = xapiClass('VM')
  if (vm === undefined) throw new Error('VM is served')
  t.equal(xapiClassOfEvent('vm'), vm, 'event classes are lower case')
  t.equal(xapiClass('VLAN'), undefined, 'classes not served are absent')
  const field = (name: string) => {
    const found = vm.fields.get(name)
    if (found === undefined) throw new Error(name)
    return found
  }
  t.equal(defaultOf(field('power_state')), 'Halted')
  t.same(defaultOf(field('HVM_shadow_multiplier')), new XmlRpcDouble(1))
  t.same(defaultOf(field('snapshot_time')), new Date(0))
  t.equal(defaultOf(field('snapshot_of')), 'OpaqueRef:NULL')
  t.equal(defaultOf(field('VCPUs_max')), 0, 'an int without a default is 0')
  t.same(defaultOf(field('VBDs')), [])
  t.equal(field('name_label')[2], 'RW')
  t.equal(typeKind('(string -> enum vm_operations) map'), 'map')
  t.ok(enumValues('vm_power_state')?.includes('Suspended'))
  const start = vm.messages.get('start')
  t.same(start?.[1].map(([name]) => name), ['session_id', 'vm', 'start_paused', 'force'])
  t.equal(vm.messages.get('get_record')?.[3], true, 'implicit messages are marked')
  t.same(defaultOf(xapiClass('host')?.fields.get('license_server') ?? field('uuid')), { address: 'localhost', port: '27000' })
})
