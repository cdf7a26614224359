import { resources } from './catalogue.js'

export interface TemplatePrivilege {
  readonly resource: string
  readonly action: string
}

export interface RoleTemplate {
  /** the stable key: template ids are random, this is how clients and reconciliation find them */
  readonly roleTemplateId: number
  readonly name: string
  readonly description: string
  readonly privileges: readonly TemplatePrivilege[]
}

const on = (resource: string, ...actions: string[]): TemplatePrivilege[] => actions.map((action) => ({ resource, action }))

/** The eight built-in templates as the reference defines them (all `allow`, no selectors). */
export const roleTemplates: readonly RoleTemplate[] = [
  {
    roleTemplateId: 1,
    name: 'Read only',
    description: 'Access the whole infra in read-only mode',
    privileges: resources.map((resource) => ({ resource, action: 'read' })),
  },
  {
    roleTemplateId: 2,
    name: 'VMs power state manager',
    description: "Allow to manage VM's power state",
    privileges: on('vm', 'start', 'shutdown', 'reboot', 'pause', 'suspend', 'resume', 'unpause'),
  },
  {
    roleTemplateId: 3,
    name: 'VMs creator',
    description: 'Allow to create VMs',
    privileges: [
      ...on('pool', 'create:vm'),
      ...on('vm-template', 'instantiate'),
      ...on('vdi', 'create'),
      ...on('vif', 'create'),
      ...on('vdi', 'boot'),
      ...on('host', 'allow-vm'),
    ],
  },
  { roleTemplateId: 4, name: 'VMs read only', description: 'Allow to only see VMs', privileges: on('vm', 'read') },
  {
    roleTemplateId: 5,
    name: 'VMs administrator',
    description: 'Full control over VM actions',
    privileges: [...on('vm', '*'), ...on('vm-snapshot', 'read')],
  },
  {
    roleTemplateId: 6,
    name: 'Network administrator',
    description: 'Manage networks across pools, hosts and VMs',
    privileges: [
      ...on('network', '*'),
      ...on('pool', 'create:network', 'read'),
      ...on('pif', 'read', 'update'),
      ...on('vif', '*'),
      ...on('host', 'read'),
      ...on('vm', 'read'),
    ],
  },
  {
    roleTemplateId: 7,
    name: 'Administrator',
    description: 'Full access to the entire infrastructure.',
    privileges: resources.map((resource) => ({ resource, action: '*' })),
  },
  {
    roleTemplateId: 8,
    name: 'Storage administrator',
    description: 'Full control over storage: SRs, VDIs, VBDs, PBDs and backup repositories',
    privileges: [
      ...['sr', 'vdi', 'vbd', 'pbd', 'backup-repository'].flatMap((resource) => on(resource, '*')),
      ...on('vdi-unmanaged', 'read'),
      ...on('sm', 'read'),
    ],
  },
]
