import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import t from 'tap'
import { DEMO_LAB_FILE } from '../../src/driver/lab/driver.js'
import { expandLab } from '../../src/driver/lab/expand.js'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { loadLabSpec } from '../../src/driver/lab/spec.js'
import type { XoRecord } from '../../src/driver/types.js'
import { messageToAlarm, recordSchemas } from '../../src/model/records.js'

// Compiled from a JSON copy: what the OpenAPI document and serializers see, not TypeBox objects.
function compileAll(): Map<string, (value: unknown) => boolean> {
  const ajv = new Ajv({ strict: true, allErrors: true })
  addFormats.default(ajv)
  const validators = new Map<string, (value: unknown) => boolean>()
  for (const [type, schema] of Object.entries(recordSchemas)) {
    const validate = ajv.compile(JSON.parse(JSON.stringify(schema)) as object)
    validators.set(type, (value) => {
      if (validate(value)) return true
      throw new Error(`${type} ${String((value as XoRecord).id)}: ${ajv.errorsText(validate.errors)}`)
    })
  }
  return validators
}

t.test('each schema is a closed, named, JSON-clean contract', async (t) => {
  const ids = new Set<string>()
  for (const [type, schema] of Object.entries(recordSchemas)) {
    t.match(schema.$id, /^[A-Z][A-Za-z]+$/, `${type} has an OpenAPI-friendly $id`)
    t.notOk(ids.has(schema.$id ?? ''), `${type} $id is unique`)
    ids.add(schema.$id ?? '')
    t.equal(schema.additionalProperties, false, `${type} is closed`)
    t.same(JSON.parse(JSON.stringify(schema.properties['type'])), { type: 'string', const: type === 'alarm' ? 'message' : type })
    t.ok(schema.required?.includes('id') && schema.required.includes('type'))
  }
  t.doesNotThrow(compileAll, 'Ajv strict mode accepts every schema')
})

t.test('every record of the demo lab validates against its schema', async (t) => {
  const validators = compileAll()
  const records = expandLab(loadLabSpec(DEMO_LAB_FILE), { creatorId: 'admin-id', now: Date.UTC(2025, 0, 15) })
  const byId = new Map(records.map((record) => [record.id, record]))
  const seen = new Set<string>()
  for (const record of records) {
    const validate = validators.get(record.type)
    t.ok(validate, `a schema for ${record.type}`)
    // Through JSON, as records are stored and served.
    t.doesNotThrow(() => validate?.(JSON.parse(JSON.stringify(record))), `${record.type} ${record.id}`)
    seen.add(record.type)
    const alarm = messageToAlarm(record, (id) => byId.get(id))
    if (alarm !== undefined) t.doesNotThrow(() => validators.get('alarm')?.(alarm), `alarm ${alarm.id}`)
  }
  t.same(
    [...seen].sort(),
    Object.keys(recordSchemas)
      .filter((type) => !['alarm', 'PCI', 'PGPU', 'vgpu', 'VTPM'].includes(type))
      .sort(),
    'the demo lab has every type but the device ones',
  )
})

t.test('generated labs validate too', async (t) => {
  const validators = compileAll()
  const records = expandLab(generateLabSpec({ vms: 400, hosts: 7, seed: 9 }), { creatorId: 'admin-id', now: Date.now() })
  let failures = 0
  for (const record of records) {
    try {
      validators.get(record.type)?.(JSON.parse(JSON.stringify(record)))
    } catch (error) {
      if (failures++ < 5) t.fail(String(error))
    }
  }
  t.equal(failures, 0)
})

t.test('schemas reject what is not a record', async (t) => {
  const validators = compileAll()
  const records = expandLab(loadLabSpec(DEMO_LAB_FILE), { creatorId: 'admin-id', now: Date.UTC(2025, 0, 15) })
  const vm = JSON.parse(JSON.stringify(records.find((record) => record.type === 'VM'))) as Record<string, unknown>
  const validate = validators.get('VM')
  t.throws(() => validate?.({ ...vm, unexpected: true }), /must NOT have additional properties/)
  t.throws(() => validate?.({ ...vm, power_state: 'Exploded' }), /power_state/)
  t.throws(() => validate?.({ ...vm, type: 'VM-template' }), /type/)
  const { $container: _, ...withoutContainer } = vm
  t.throws(() => validate?.(withoutContainer), /\$container/)
})
