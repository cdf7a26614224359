import { step, type XapiAction } from './context.js'

export const srActions: Readonly<Record<string, XapiAction>> = {
  scan: async (_env, { pool, ref }, _params, context) => {
    await pool.callAsync('SR.scan', [ref], step(context))
    return undefined
  },
}
