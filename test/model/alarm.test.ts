import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import { messageToAlarm, type MessageRecord } from '../../src/model/records.js'

const POOL = 'b7569d99-30f8-478a-bd94-801de3e29b5b'
const VM_UUID = 'cef5f68c-61ae-4831-92e6-1590d4934acf'

const message = (name: string, body: string): MessageRecord => ({
  type: 'message',
  id: '0c98c71c-2f9c-45c2-b9b6-2c8371730eab',
  uuid: '0c98c71c-2f9c-45c2-b9b6-2c8371730eab',
  $pool: POOL,
  $poolId: POOL,
  _xapiRef: 'OpaqueRef:87ccf385-4197-41aa-bca0-32213c4cb56d',
  name,
  body,
  time: 1724862780,
  $object: VM_UUID,
})

const perfmon = (value: string, metric: string): string =>
  `value: ${value}\nconfig:\n<variable>\n\t<name value="${metric}"/>\n\t<alarm_trigger_level value="0.9"/>\n</variable>\n`

const vm: XoRecord = { id: VM_UUID, type: 'VM', uuid: VM_UUID }
const lookup = (id: string): XoRecord | undefined => (id === VM_UUID ? vm : undefined)
const linkOf = (object: XoRecord): string => `/rest/v0/vms/${object.id}`

t.test('an ALARM message becomes an alarm', async (t) => {
  const { $object: _, body: __, ...rest } = message('ALARM', perfmon('0.951', 'cpu_usage'))
  t.same(messageToAlarm(message('ALARM', perfmon('0.951', 'cpu_usage')), lookup, linkOf), {
    ...rest,
    body: { value: '95.1', name: 'cpu_usage' },
    object: { type: 'VM', uuid: VM_UUID, href: `/rest/v0/vms/${VM_UUID}` },
    time: 1724862780000,
  })
})

t.test('values that are not finite numbers stay as text', async (t) => {
  t.same(messageToAlarm(message('ALARM', perfmon('NaN', 'mem_usage')), lookup)?.body, { value: 'NaN', name: 'mem_usage' })
  t.same(messageToAlarm(message('ALARM', perfmon('Infinity', 'x')), lookup)?.body, { value: 'Infinity', name: 'x' })
})

t.test('alarms with a plain body keep it as their name', async (t) => {
  const body = 'The status of the eth0+eth1 bond is: 1/2 up'
  t.same(messageToAlarm(message('BOND_STATUS_CHANGED', body), lookup)?.body, { name: body })
  t.same(messageToAlarm(message('MULTIPATH_PERIODIC_ALERT', 'paths down'), lookup)?.body, { name: 'paths down' })
})

t.test('an unknown object is typed unknown, without href', async (t) => {
  t.same(messageToAlarm(message('ALARM', perfmon('0.5', 'cpu_usage')))?.object, { type: 'unknown', uuid: VM_UUID })
  t.same(messageToAlarm(message('ALARM', perfmon('0.5', 'cpu_usage')), () => undefined)?.object, {
    type: 'unknown',
    uuid: VM_UUID,
  })
})

t.test('other records are not alarms', async (t) => {
  t.equal(messageToAlarm(message('VM_STARTED', 'VM started')), undefined)
  t.equal(messageToAlarm({ ...vm, name: 'ALARM' }), undefined)
})
