import type { Plan } from './plan.js'

/**
 * A VM's other_config as XAPI writes it (the simulator's VM.set_other_config,
 * add_to_ and remove_from_): stored with the lab's records, so that it
 * outlives a restart as it outlives one in XAPI's pool database.
 */
export function setOtherConfig(plan: Plan, id: string, other: Readonly<Record<string, string>>): void {
  plan.edit(id, 'VM', 'VM-snapshot', 'VM-template', 'VM-controller').other = { ...other }
}
