import t from 'tap'
import { CREATION_KEY, decodeCreation, encodeCreation } from '../../src/driver/xapi/creation.js'
import { XoMapper } from '../helpers/xo-mapping.js'
import { startSimulator } from '../helpers/xapi-simulator.js'

const creation = { date: '2026-11-26T23:00:00.000Z', template: 'pool-1-tpl', user: 'user-1', creator: 'user-1' }

t.test('a creation survives its other_config entry; a malformed entry reads as none', async (t) => {
  t.same(decodeCreation(encodeCreation(creation)), creation)
  const { template: _template, ...blank } = creation
  t.same(decodeCreation(encodeCreation(blank)), blank, 'a VM made from no template')
  for (const entry of [undefined, '', 'not json', 'null', '[]', '{}', JSON.stringify({ ...creation, date: 'yesterday' }), JSON.stringify({ ...creation, user: 7 }), JSON.stringify({ ...creation, template: '' })]) {
    t.equal(decodeCreation(entry), undefined, String(entry))
  }
})

t.test('the XAPI driver reads a VM\u2019s creation from its other_config', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [vm] = await xapi.call<string[]>('VM.get_by_name_label', [session, 'staging-app'])
  const mapper = new XoMapper(xapi.simulator.services.db)
  t.equal(mapper.toXo(String(vm))?.['creation'], undefined, 'none before Keel records one')
  await xapi.call('VM.add_to_other_config', [session, vm, CREATION_KEY, encodeCreation(creation)])
  t.same(mapper.toXo(String(vm))?.['creation'], creation)
})
