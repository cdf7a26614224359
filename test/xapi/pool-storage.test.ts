import t from 'tap'
import { startSimulator } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

t.test('SR.create, PBD.unplug, then SR.destroy and SR.forget, refused while a PBD is plugged', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const pool = Object.values(await xapi.call<Records>('pool.get_all_records', [session]))[0] ?? {}
  const master = String(pool['master'])
  const nfs = { server: '10.0.0.9', serverpath: '/exports/more' }
  const create = (type: string, config: Record<string, string>) => [session, master, config, 0, 'More NFS', '', type, '', true, {}]

  t.same(await xapi.json('SR.create', create('tape', nfs)), { error: ['SR_UNKNOWN_DRIVER', 'tape'] })
  t.match(await xapi.json('SR.create', create('nfs', { path: '/etc' })), { error: ['SR_BACKEND_FAILURE'] })
  const before = await xapi.call<string[]>('SR.get_all', [session])
  const sr = await xapi.call<string>('SR.create', create('nfs', nfs))
  t.equal((await xapi.call<string[]>('SR.get_all', [session])).length, before.length + 1, 'the refusals made nothing')
  t.match(await xapi.call('SR.get_record', [session, sr]), { name_label: 'More NFS', type: 'nfs', content_type: 'user', shared: true })
  const pbds = await xapi.call<string[]>('SR.get_PBDs', [session, sr])
  t.equal(pbds.length, Object.keys(await xapi.call<Records>('host.get_all_records', [session])).length, 'a PBD on every host')

  t.same(await xapi.json('SR.destroy', [session, sr]), { error: ['SR_HAS_PBD', sr] })
  t.same(await xapi.json('SR.forget', [session, sr]), { error: ['SR_HAS_PBD', sr] })
  for (const pbd of pbds) {
    t.equal(await xapi.call('PBD.unplug', [session, pbd]), '')
    t.equal(await xapi.call('PBD.get_currently_attached', [session, pbd]), false)
  }
  t.equal(await xapi.call('PBD.unplug', [session, pbds[0]]), '', 'an unplugged PBD unplugged again: nothing happens')
  t.equal(await xapi.call('PBD.plug', [session, pbds[0]]), '')
  t.same(await xapi.json('SR.forget', [session, sr]), { error: ['SR_HAS_PBD', sr] }, 'one plugged PBD is enough to refuse')
  t.equal(await xapi.call('PBD.unplug', [session, pbds[0]]), '')
  t.equal(await xapi.call('SR.forget', [session, sr]), '')
  t.same(await xapi.json('SR.get_record', [session, sr]), { error: ['HANDLE_INVALID', 'SR', sr] })
  t.same(await xapi.json('PBD.get_record', [session, pbds[0]]), { error: ['HANDLE_INVALID', 'PBD', pbds[0]] }, 'its PBDs went with it')
})

t.test('pool.create_VLAN_from_PIF and Bond.create, with XAPI\u2019s checks; the updater plugin', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const pool = Object.values(await xapi.call<Records>('pool.get_all_records', [session]))[0] ?? {}
  const master = String(pool['master'])
  const pifs = Object.entries(await xapi.call<Records>('PIF.get_all_records', [session]))
  const onMaster = (device: string): string => pifs.find(([, pif]) => pif['host'] === master && pif['device'] === device)?.[0] ?? ''
  const network = async (name: string): Promise<string> => xapi.call<string>('network.create', [session, { name_label: name, name_description: '', MTU: 1500, other_config: {} }])

  const vlan = await network('storage')
  t.same(await xapi.json('pool.create_VLAN_from_PIF', [session, onMaster('eth1'), vlan, 4095]), { error: ['VLAN_TAG_INVALID', '4095'] })
  const tagged = await xapi.call<string[]>('pool.create_VLAN_from_PIF', [session, onMaster('eth1'), vlan, 20])
  t.equal(tagged.length, new Set(pifs.map(([, pif]) => pif['host'])).size, 'one tagged PIF on every host')
  for (const ref of tagged) t.match(await xapi.call('PIF.get_record', [session, ref]), { device: 'eth1', VLAN: 20, physical: false, network: vlan })
  t.same(await xapi.json('pool.create_VLAN_from_PIF', [session, onMaster('eth1'), vlan, 20]), { error: ['PIF_VLAN_EXISTS', onMaster('eth1')] })
  t.same(await xapi.json('pool.create_VLAN_from_PIF', [session, tagged[0], vlan, 30]), { error: ['PIF_IS_VLAN', tagged[0]] })
  t.same(await xapi.call('network.get_PIFs', [session, vlan]), tagged, 'the refusals made nothing')

  const bonded = await network('bonded')
  const member = pifs.find(([, pif]) => pif['host'] !== master && pif['device'] === 'eth1')?.[0] ?? ''
  t.same(await xapi.json('Bond.create', [session, bonded, [onMaster('eth0')], '', 'active-backup', {}]), { error: ['PIF_BOND_NEEDS_MORE_MEMBERS'] })
  t.same(await xapi.json('Bond.create', [session, bonded, [onMaster('eth0'), member], '', 'active-backup', {}]), { error: ['PIF_CANNOT_BOND_CROSS_HOST'] })
  const bond = await xapi.call<string>('Bond.create', [session, bonded, [onMaster('eth0'), onMaster('eth1')], '', 'active-backup', {}])
  const record = await xapi.call<Record<string, unknown>>('Bond.get_record', [session, bond])
  t.same([...(record['slaves'] as string[])].sort(), [onMaster('eth0'), onMaster('eth1')].sort())
  t.match(await xapi.call('PIF.get_record', [session, String(record['master'])]), { device: 'bond0', network: bonded, bond_master_of: [bond] })
  t.match(await xapi.call('PIF.get_record', [session, onMaster('eth0')]), { bond_slave_of: bond })
  t.same(await xapi.json('Bond.create', [session, bonded, [onMaster('eth0'), onMaster('eth1')], '', 'lacp', {}]), { error: ['PIF_ALREADY_BONDED', onMaster('eth0')] })

  const missing = JSON.parse(await xapi.call<string>('host.call_plugin', [session, master, 'updater.py', 'check_update', {}])) as Array<{ name: string }>
  t.ok(missing.length > 0, 'the lab\u2019s host lacks updates')
  t.equal(await xapi.call('host.call_plugin', [session, master, 'updater.py', 'update', {}]), '')
  t.same(JSON.parse(await xapi.call<string>('host.call_plugin', [session, master, 'updater.py', 'check_update', {}])), [], 'installed')
})
