import type { TObject } from '@sinclair/typebox'
import type { AccessControl } from '../acl/store.js'
import type { Directory } from '../auth/users.js'
import { AclAuditSchema, AclPrivilegeSchema, AclRoleSchema } from '../model/acl.js'
import type { Driver, XoRecord } from '../driver/types.js'
import { GroupSchema, UserSchema } from '../model/directory.js'
import { messageToAlarm } from '../model/alarm.js'
import { recordSchemas } from '../model/records.js'
import { TaskSchema } from '../model/task.js'
import { hrefOf } from './paths.js'
import type { CollectionSource } from './sources.js'

/** REST collection name → driver object type and access-control resource. */
const infrastructure: ReadonlyArray<readonly [name: string, type: string, resource: string]> = [
  ['vms', 'VM', 'vm'],
  ['vm-snapshots', 'VM-snapshot', 'vm-snapshot'],
  ['vm-templates', 'VM-template', 'vm-template'],
  ['vm-controllers', 'VM-controller', 'vm-controller'],
  ['hosts', 'host', 'host'],
  ['pools', 'pool', 'pool'],
  ['srs', 'SR', 'sr'],
  ['vdis', 'VDI', 'vdi'],
  ['vdi-snapshots', 'VDI-snapshot', 'vdi-snapshot'],
  ['vdi-unmanaged', 'VDI-unmanaged', 'vdi-unmanaged'],
  ['vbds', 'VBD', 'vbd'],
  ['vifs', 'VIF', 'vif'],
  ['pifs', 'PIF', 'pif'],
  ['pbds', 'PBD', 'pbd'],
  ['sms', 'SM', 'sm'],
  ['networks', 'network', 'network'],
  ['messages', 'message', 'message'],
  ['pcis', 'PCI', 'pci'],
  ['pgpus', 'PGPU', 'pgpu'],
  ['vgpus', 'vgpu', 'vgpu'],
  ['gpu-groups', 'gpuGroup', 'gpuGroup'],
  ['vtpms', 'VTPM', 'vtpm'],
]

function schemaFor(type: string): TObject {
  const schema = recordSchemas[type]
  if (schema === undefined) throw new Error(`no record schema for type ${type}`)
  return schema
}

function driverSource(driver: Driver, name: string, type: string, resource: string): CollectionSource {
  return {
    name,
    type,
    resource,
    schema: schemaFor(type),
    list: () => driver.objectsOfType(type),
    size: () => driver.countOfType(type),
    get: (id) => {
      const object = driver.getObject(id)
      return object?.type === type ? object : undefined
    },
  }
}

/** Alarms are a view of ALARM messages; each view is kept while its message object lives, so its JSON stays cached. */
function alarmSource(driver: Driver, linkOf: (object: XoRecord) => string | undefined): CollectionSource {
  const views = new WeakMap<XoRecord, XoRecord | null>()
  const view = (message: XoRecord): XoRecord | undefined => {
    let alarm = views.get(message)
    if (alarm === undefined) {
      const made: XoRecord | null = messageToAlarm(message, (id) => driver.getObject(id), linkOf) ?? null
      views.set(message, made)
      alarm = made
    }
    return alarm ?? undefined
  }
  return {
    name: 'alarms',
    type: 'alarm',
    versionTypes: ['message'],
    resource: 'alarm',
    schema: schemaFor('alarm'),
    view: (record) => (record.type === 'message' ? view(record) : undefined),
    size: () => driver.countOfType('message'),
    *list() {
      for (const message of driver.objectsOfType('message')) {
        const alarm = view(message)
        if (alarm !== undefined) yield alarm
      }
    },
    get: (id) => {
      const message = driver.getObject(id)
      return message?.type === 'message' ? view(message) : undefined
    },
  }
}

export interface SourceDeps {
  readonly driver: Driver
  readonly directory: Directory
  readonly acl: AccessControl
  readonly tasks: { list(): Iterable<XoRecord>; get(id: string): XoRecord | undefined }
}

export function collectionSources({ driver, directory, acl, tasks }: SourceDeps): CollectionSource[] {
  const collectionOfType = new Map(infrastructure.map(([name, type]) => [type, name]))
  const linkOf = (object: XoRecord): string | undefined => {
    const collection = collectionOfType.get(object.type)
    return collection === undefined ? undefined : hrefOf(collection, object.id)
  }
  return [
    ...infrastructure.map(([name, type, resource]) => driverSource(driver, name, type, resource)),
    alarmSource(driver, linkOf),
    { name: 'users', type: 'user', resource: 'user', schema: UserSchema, selfReadable: true, list: () => directory.users(), get: (id) => directory.user(id) },
    { name: 'groups', type: 'group', resource: 'group', schema: GroupSchema, list: () => directory.groups(), get: (id) => directory.group(id) },
    { name: 'tasks', type: 'task', resource: 'task', schema: TaskSchema, list: () => tasks.list(), get: (id) => tasks.get(id) },
    { name: 'acl-roles', type: 'acl-role', resource: 'acl-role', schema: AclRoleSchema, list: () => acl.roles(), get: (id) => acl.role(id) },
    {
      name: 'acl-privileges',
      type: 'acl-privilege',
      resource: 'acl-privilege',
      schema: AclPrivilegeSchema,
      list: () => acl.privileges(),
      get: (id) => acl.privilege(id),
    },
    // The audit trail names no resource: administrators only.
    { name: 'acl-audit', type: 'acl-audit', schema: AclAuditSchema, list: () => acl.audit(), get: (id) => acl.auditEntry(id) },
  ]
}
