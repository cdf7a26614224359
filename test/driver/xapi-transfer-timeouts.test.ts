import t from 'tap'
import { BLOCK_SIZE, type DiskBlock } from '../../src/formats/blocks.js'
import { XapiTransportError } from '../../src/driver/xapi/transport.js'
import { drain, patternBlock } from '../helpers/disks.js'
import { failure, injectFault, simulatedPool } from '../helpers/xapi-driver.js'
import { named } from './fixtures/lab.js'

/** Short enough for a test, long enough for a simulator in the same process to send what it sends, with the whole suite running on two cores. */
const LIMIT = 5_000

t.test('an export whose host stops mid-body and stays silent fails once no byte moved for the idle timeout (issue 28): the task cancelled, the disk read whole again after', async (t) => {
  const { simulator, driver } = await simulatedPool(t, { driver: { transferTimeouts: { response: 0, idle: LIMIT } } })
  const sr = named(driver, 'SR', 'NFS shared storage')
  const session = await driver.disks.importVdi(sr, { name_label: 'stalled', name_description: '', size: 3 * BLOCK_SIZE })
  const written = [patternBlock(1), patternBlock(2), patternBlock(3)]
  for (const [index, data] of written.entries()) await session.write(0, { index, data })
  const vdi = driver.getObject((await session.commit()).id)
  if (vdi === undefined) throw new Error('the new VDI is not indexed')

  // Into the second block of the VHD stream: the first was read, the rest never comes.
  await injectFault(simulator.url, { stall_next_export_after: BLOCK_SIZE + 64 * 1024 })
  const read: DiskBlock[] = []
  const error = await failure(
    (async () => {
      for await (const block of driver.disks.readBlocks(vdi, [0, 1, 2])) read.push({ index: block.index, data: Buffer.from(block.data) })
    })(),
  )
  t.ok(error instanceof XapiTransportError && error.timedOut, String(error))
  t.match(String(error), /moved no byte for 5000 ms/)
  t.same(
    read.map((block) => block.index),
    [0],
    'the block that came whole, then the failure',
  )
  const xapiSession = await simulator.login()
  const tasks = await simulator.call<Record<string, { name_label: string }>>('task.get_all_records', [xapiSession])
  t.same(
    Object.values(tasks).filter((task) => task.name_label.startsWith('Keel')),
    [],
    'the XAPI task cancelled and destroyed',
  )
  const again = await drain(driver.disks.readBlocks(vdi, [0, 1, 2]))
  t.same(
    again.map((block) => Buffer.from(block.data).equals(written[block.index] as Buffer)),
    [true, true, true],
    'the disk read whole again',
  )
})
