import type { XapiDatabase } from '../../src/simulator/database.js'
import { isRef, type MappingContext } from '../../src/driver/xapi/mapping/context.js'
import { vmId, xoRecord, type Fields } from '../../src/driver/xapi/mapping/index.js'

/**
 * The XAPI driver's mapping (src/driver/xapi/mapping) over the simulator's
 * database, for tests that hold the simulator's records against the lab's.
 */
export class XoMapper {
  readonly #db: XapiDatabase
  readonly #context: MappingContext

  constructor(db: XapiDatabase) {
    this.#db = db
    let poolId = ''
    for (const pool of db.ofClass('pool')) poolId = pool.uuid
    const object: MappingContext['object'] = (ref) => {
      const stored = isRef(ref) ? db.get(ref) : undefined
      return stored === undefined ? undefined : { cls: stored.cls, ref: stored.ref, record: stored.record }
    }
    this.#context = {
      poolId,
      object,
      id: (ref) => {
        const found = object(ref)
        return found === undefined ? undefined : found.cls === 'VM' ? vmId(found.record, poolId) : String(found.record['uuid'])
      },
      idOfUuid: (uuid) => {
        for (const cls of ['VM', 'host', 'SR', 'VDI', 'pool']) {
          for (const stored of db.ofClass(cls)) if (stored.uuid === uuid) return cls === 'VM' ? vmId(stored.record, poolId) : uuid
        }
        return undefined
      },
    }
  }

  /** XO's link(): a ref as the id of what it names. */
  id(ref: unknown): string | undefined {
    return this.#context.id(ref)
  }

  /** The XO record of the object `ref`, as the XAPI driver serves it. */
  toXo(ref: string): Fields | undefined {
    const stored = this.#db.get(ref)
    return stored === undefined ? undefined : xoRecord({ cls: stored.cls, ref: stored.ref, record: stored.record }, this.#context)
  }
}
