import t from 'tap'
import { checkCapabilities, type Catalogue } from '../../src/driver/capabilities.js'
import type { DriverCapabilities } from '../../src/driver/types.js'
import { actionsByType, creationsByType, deletableTypes, patchByType, taggableTypes } from '../../src/model/operations.js'

const catalogue: Catalogue = {
  actionsByType: { VM: [{ name: 'start' }, { name: 'pause' }], host: [{ name: 'enable' }] },
  patchTypes: ['VM', 'VDI'],
  deletableTypes: ['VM'],
  taggableTypes: ['VM', 'host'],
  creatableTypes: ['VBD'],
}

const none: DriverCapabilities = { actions: {}, patch: [], destroy: [], tags: [] }

/** The message checkCapabilities throws, or undefined when it accepts. */
function mismatches(capabilities: DriverCapabilities): string | undefined {
  try {
    checkCapabilities(capabilities, catalogue)
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

t.test('a driver may declare all or part of the catalogue', async (t) => {
  const cases: Array<[string, DriverCapabilities]> = [
    ['nothing', none],
    ['part', { actions: { VM: ['pause'] }, patch: ['VDI'], destroy: [], tags: ['host'] }],
    ['everything', { actions: { VM: ['start', 'pause'], host: ['enable'] }, patch: ['VM', 'VDI'], destroy: ['VM'], tags: ['VM', 'host'] }],
    ['a type with no actions', { ...none, actions: { SR: [] } }],
  ]
  for (const [name, capabilities] of cases) t.equal(mismatches(capabilities), undefined, name)
})

t.test('each thing the catalogue does not know is a start-up failure', async (t) => {
  const cases: Array<[string, DriverCapabilities, string]> = [
    ['an unknown action', { ...none, actions: { VM: ['start', 'explode'] } }, 'action explode on VM: not in the catalogue'],
    ['an action of another type', { ...none, actions: { host: ['start'] } }, 'action start on host: not in the catalogue'],
    ['a type without actions', { ...none, actions: { SR: ['scan'] } }, 'actions on SR: the catalogue has no actions for that type'],
    ['an inherited name', { ...none, actions: { toString: ['valueOf'] } }, 'actions on toString: the catalogue has no actions for that type'],
    ['PATCH', { ...none, patch: ['VM', 'network'] }, 'PATCH of network: not in the catalogue'],
    ['DELETE', { ...none, destroy: ['host'] }, 'DELETE of host: not in the catalogue'],
    ['tags', { ...none, tags: ['SR'] }, 'tags of SR: not in the catalogue'],
    ['POST', { ...none, create: ['VBD', 'host'] }, 'POST of host: not in the catalogue'],
  ]
  for (const [name, capabilities, expected] of cases) {
    const message = mismatches(capabilities)
    t.ok(message?.includes(expected), `${name}: ${message}`)
  }
})

t.test('every mismatch is listed at once', async (t) => {
  const message = mismatches({ actions: { VM: ['explode', 'start'], pool: ['x'] }, patch: ['network'], destroy: ['host'], tags: ['SR'] })
  t.ok(message !== undefined)
  t.same(message?.split('\n').slice(1), [
    '- action explode on VM: not in the catalogue',
    '- actions on pool: the catalogue has no actions for that type',
    '- PATCH of network: not in the catalogue',
    '- DELETE of host: not in the catalogue',
    '- tags of SR: not in the catalogue',
  ])
})

t.test('the API catalogue itself, as src/model/operations.ts exports it, fits the Catalogue shape', async (t) => {
  const real: Catalogue = { actionsByType, patchTypes: Object.keys(patchByType), deletableTypes, taggableTypes, creatableTypes: Object.keys(creationsByType) }
  const everything: DriverCapabilities = {
    actions: Object.fromEntries(Object.entries(actionsByType).map(([type, specs]) => [type, specs.map((spec) => spec.name)])),
    patch: real.patchTypes,
    destroy: deletableTypes,
    tags: taggableTypes,
    create: real.creatableTypes,
  }
  t.ok(Object.keys(everything.actions).length > 0)
  t.doesNotThrow(() => checkCapabilities(everything, real))
})
