import type { PoolConnector } from '../driver/xapi/types.js'
import { KeelError } from '../errors.js'

/** The connector of a service running the embedded lab: it has no pool to reach, and says how to get one. */
export const labPoolConnector: PoolConnector = {
  connect: () =>
    Promise.reject(new KeelError('XAPI_DRIVER_REQUIRED', 'this service runs the lab driver: set [driver] kind = xapi to connect pools')),
}
