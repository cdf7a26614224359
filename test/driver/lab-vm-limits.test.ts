import t from 'tap'
import { context, openLab } from '../helpers/lab.js'
import { current, failure, named, problems } from './fixtures/lab.js'

const GiB = 2 ** 30

t.test('VM limits as XAPI sets them: vCPUs apart, memory in XAPI\u2019s order, static ones only while halted', async (t) => {
  const { driver, changes } = await openLab(t)
  const erp = named(driver, 'VM', 'legacy-erp')
  await driver.setVmLimits(erp, { cpus: { max: 8, atStartup: 2 }, memory: { staticMin: GiB, staticMax: 32 * GiB, dynamicMin: 4 * GiB, dynamicMax: 8 * GiB } })
  t.equal(changes.length, 1, 'one change event')
  t.match(current(driver, erp.id), { CPUs: { max: 8, number: 2 }, memory: { static: [GiB, 32 * GiB], dynamic: [4 * GiB, 8 * GiB], size: 8 * GiB } })

  const before = current(driver, erp.id)
  const order = await failure(driver.setVmLimits(before, { memory: { staticMin: GiB, staticMax: 2 * GiB, dynamicMin: 4 * GiB, dynamicMax: 4 * GiB } }))
  t.same([order.code, order.data?.['errors']], ['INVALID_PARAMETERS', [{ path: 'body.memory', message: 'needs static_min <= dynamic_min <= dynamic_max <= static_max' }]])
  const cpus = await failure(driver.setVmLimits(before, { cpus: { max: 2, atStartup: 3 } }))
  t.same([cpus.code, cpus.data?.['errors']], ['INVALID_PARAMETERS', [{ path: 'body.VCPUs_at_startup', message: 'must be between 1 and VCPUs_max' }]])
  t.equal(current(driver, erp.id), before, 'nothing changed')
  t.equal((await failure(driver.setVmLimits(named(driver, 'VM-template', 'Debian Bookworm 12'), { cpus: { max: 1, atStartup: 1 } }))).code, 'NO_SUCH_OBJECT', 'VMs only')

  // Started with 1 GiB of a 1 TiB static range: the host cannot give it all.
  await driver.setVmLimits(before, { memory: { staticMin: GiB, staticMax: 1024 * GiB, dynamicMin: GiB, dynamicMax: GiB } })
  await driver.perform(current(driver, erp.id), 'start', {}, context())
  const running = current(driver, erp.id)
  const host = String(running['$container'])
  const maximum = await failure(driver.setVmLimits(running, { cpus: { max: 9, atStartup: 2 } }))
  t.same([maximum.code, maximum.data?.['property'], maximum.data?.['actual']], ['INCORRECT_STATE', 'power_state', 'Running'])
  const staticChange = await failure(driver.setVmLimits(running, { memory: { staticMin: GiB, staticMax: 512 * GiB, dynamicMin: GiB, dynamicMax: GiB } }))
  t.same([staticChange.code, staticChange.data?.['property']], ['INCORRECT_STATE', 'power_state'])
  const short = await failure(driver.setVmLimits(running, { memory: { staticMin: GiB, staticMax: 1024 * GiB, dynamicMin: GiB, dynamicMax: 1024 * GiB } }))
  t.same([short.code, short.data?.['property'], short.data?.['object']], ['INCORRECT_STATE', 'memory_free', host])
  t.equal(current(driver, erp.id), running, 'nothing changed')
  const hostUsage = (current(driver, host)['memory'] as { usage: number }).usage
  await driver.setVmLimits(running, { cpus: { max: 8, atStartup: 4 }, memory: { staticMin: GiB, staticMax: 1024 * GiB, dynamicMin: GiB, dynamicMax: 3 * GiB } })
  t.match(current(driver, erp.id), { CPUs: { max: 8, number: 4 }, memory: { size: 3 * GiB } }, 'a running guest balloons and gets vCPUs up to its maximum')
  t.equal((current(driver, host)['memory'] as { usage: number }).usage, hostUsage + 2 * GiB, 'its host gives the memory')
  t.same(problems(driver), [])
})
