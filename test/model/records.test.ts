import t from 'tap'
import { DEMO_LAB_FILE } from '../../src/driver/lab/driver.js'
import { expandLab } from '../../src/driver/lab/expand.js'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { loadLabSpec } from '../../src/driver/lab/spec.js'
import type { XoRecord } from '../../src/driver/types.js'
import { messageToAlarm, recordSchemas } from '../../src/model/records.js'
import { compileAll } from '../helpers/schemas.js'

/** What is wrong with a record, through JSON as records are stored and served; 'no schema' for an unknown type. */
function problem(validators: ReturnType<typeof compileAll>, record: XoRecord, type = record.type): string | undefined {
  const validate = validators.get(type)
  return validate === undefined ? 'no schema' : validate(JSON.parse(JSON.stringify(record)))
}

t.test('each schema is a closed, named, JSON-clean contract', async (t) => {
  t.ok(Object.keys(recordSchemas).length > 0)
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
  t.ok(records.length > 0)
  const byId = new Map(records.map((record) => [record.id, record]))
  const seen = new Set<string>()
  let alarms = 0
  for (const record of records) {
    t.equal(problem(validators, record), undefined, `${record.type} ${record.id}`)
    seen.add(record.type)
    const alarm = messageToAlarm(record, (id) => byId.get(id))
    if (alarm === undefined) continue
    alarms++
    t.equal(problem(validators, alarm, 'alarm'), undefined, `alarm ${alarm.id}`)
  }
  t.ok(alarms > 0, 'some messages are alarms')
  t.same(
    [...seen].sort(),
    Object.keys(recordSchemas)
      .filter((type) => !['alarm', 'PCI', 'PGPU', 'vgpu', 'VTPM', 'VDI-unmanaged'].includes(type))
      .sort(),
    'the demo lab has every type but the device ones and unmanaged disks',
  )
})

t.test('generated labs validate too', async (t) => {
  const validators = compileAll()
  const records = expandLab(generateLabSpec({ vms: 400, hosts: 7, seed: 9 }), { creatorId: 'admin-id', now: Date.now() })
  t.ok(records.length > 0)
  const problems = records.flatMap((record) => {
    const found = problem(validators, record)
    return found === undefined ? [] : [`${record.type} ${record.id}: ${found}`]
  })
  t.same(problems.slice(0, 5), [], `${problems.length} invalid records`)
})

t.test('schemas reject what is not a record', async (t) => {
  const validators = compileAll()
  const records = expandLab(loadLabSpec(DEMO_LAB_FILE), { creatorId: 'admin-id', now: Date.UTC(2025, 0, 15) })
  const vm = JSON.parse(JSON.stringify(records.find((record) => record.type === 'VM'))) as Record<string, unknown>
  const validate = validators.get('VM')
  if (validate === undefined) throw new Error('no VM schema')
  t.equal(validate(vm), undefined, 'the record as it is')
  t.match(validate({ ...vm, unexpected: true }), /must NOT have additional properties/)
  t.match(validate({ ...vm, power_state: 'Exploded' }), /power_state/)
  t.match(validate({ ...vm, type: 'VM-template' }), /type/)
  const { $container: _, ...withoutContainer } = vm
  t.match(validate(withoutContainer), /\$container/)
})
