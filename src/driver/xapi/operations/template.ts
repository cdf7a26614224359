import { incorrectState } from '../../../errors.js'
import { destroyersByType, type XapiDestroyer } from './destroy.js'

/**
 * A custom template goes as a VM does, with its drives and the disks only
 * it uses; a default template, shipped with the hosts, is refused as the lab
 * refuses it.
 */
export const destroyTemplate: XapiDestroyer = async (target, context, env) => {
  if (target.object['isDefaultTemplate'] === true) {
    throw incorrectState({ actual: true, expected: false, object: target.object.id, property: 'isDefaultTemplate' })
  }
  const destroyVm = destroyersByType['VM']
  if (destroyVm === undefined) throw new Error('the VM destroyer is missing')
  await destroyVm(target, context, env)
}
