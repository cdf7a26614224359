import t from 'tap'
import { diskSize } from '../../src/driver/disk-size.js'

t.test("a disk's size is its record's whole, non-negative byte count", async (t) => {
  t.equal(diskSize({ id: 'd', type: 'VDI', size: 2 ** 40 }), 2 ** 40)
  t.equal(diskSize({ id: 's', type: 'VDI-snapshot', size: 0 }), 0, 'an empty disk is a size')
  for (const size of [undefined, null, '1024', -512, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
    t.throws(() => diskSize({ id: 'd', type: 'VDI', size }), { message: 'VDI d has no usable size' }, String(size))
  }
})
