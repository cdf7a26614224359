/**
 * The resources privileges can name and the actions of each (spec 2), exactly.
 * An action is `name` or `name:sub`; `*` is accepted for every resource.
 */
const update = (...fields: string[]): string[] => fields.map((field) => `update:${field}`)

export const actionsByResource: Readonly<Record<string, readonly string[]>> = {
  vm: [
    'read', 'clone', 'delete', 'migrate-send', 'export', 'pause', 'start', 'resume', 'revert-snapshot', 'snapshot',
    'suspend', 'unpause', 'reboot:clean', 'reboot:hard', 'shutdown:clean', 'shutdown:hard',
    ...update(
      'affinityHost', 'autoPoweron', 'blockedOperations', 'coresPerSocket', 'cpuCap', 'cpuMask', 'cpuWeight', 'cpus',
      'cpusStaticMax', 'creation', 'datasources', 'expNestedHvm', 'hasVendorDevice', 'highAvailability',
      'hvmBootFirmware', 'memory', 'memoryMax', 'memoryMin', 'memoryStaticMax', 'nameDescription', 'nameLabel',
      'nestedVirt', 'nicType', 'notes', 'PV_args', 'resourceSet', 'secureBoot', 'share', 'startDelay', 'suspendSr',
      'tags', 'uefiMode', 'vga', 'videoram', 'viridian', 'virtualizationMode', 'xenStoreData',
    ),
    // Beyond the spec's list: opening the VM's console (/api/consoles/<id>), which the reference gives to whoever operates the VM.
    'console',
  ],
  'vm-snapshot': ['read', 'delete', 'export', 'update:tags'],
  'vm-template': ['read', 'delete', 'export', 'instantiate', 'update:tags'],
  'vm-controller': ['read', 'update:tags'],
  vdi: [
    'read', 'create', 'delete', 'boot', 'export-content', 'import-content', 'migrate-send',
    ...update('name_description', 'name_label', 'size', 'tags'),
  ],
  'vdi-snapshot': ['read', 'delete', 'export', 'update:tags'],
  'vdi-unmanaged': ['read'],
  vif: [
    'connect', 'create', 'delete', 'disconnect', 'read',
    ...update('allowedIpv4Addresses', 'allowedIpv6Addresses', 'lockingMode', 'rateLimit', 'txChecksumming', 'other_config'),
  ],
  vbd: ['read', 'create', 'delete', 'connect', 'disconnect'],
  sr: ['read', 'create', 'delete', 'forget', 'migrate-receive', 'reclaim-space', 'scan', 'import:vdi', 'import:vm', 'update:tags'],
  host: [
    'read', 'allow-vm', 'join-pool', 'export:logs', 'update:tags', 'migrate-receive', 'disable', 'enable', 'evacuate',
    'detach', 'shutdown:clean', 'shutdown:emergency', 'forget', 'reboot:clean', 'reboot:smart', 'restart-toolstack',
    'start', 'scan-pifs',
    // Beyond the spec's list, as for VMs: the host's console.
    'console',
  ],
  pool: ['add-host', 'read', 'emergency-shutdown', 'rolling-reboot', 'rolling-update', 'create:network', 'create:vm', 'update:tags'],
  network: ['read', 'create', 'delete', 'update:tags', 'update:other_config'],
  pif: ['read', 'update:management'],
  pbd: ['read', 'plug', 'unplug'],
  pci: ['read'],
  pgpu: ['read'],
  vgpu: ['read'],
  vgpuType: ['read'],
  vtpm: ['read'],
  sm: ['read'],
  gpuGroup: ['read'],
  message: ['read'],
  // Beyond the reference (read only there): jobs, schedules and archives are managed over REST too.
  'backup-job': ['read', 'create', 'delete', 'run', ...update('name', 'mode', 'compression', 'remotes', 'vms', 'settings')],
  'backup-archive': ['read', 'restore', 'delete'],
  'backup-log': ['read'],
  'restore-log': ['read'],
  proxy: ['read'],
  alarm: ['read'],
  'backup-repository': ['benchmark', 'create', 'read', 'forget', ...update('enabled', 'name', 'options', 'proxy', 'url')],
  schedule: ['read', 'run', 'create', 'delete', ...update('cron', 'enabled', 'jobId', 'name', 'timezone')],
  server: ['read', 'create', 'delete', 'connect', 'disconnect'],
  task: ['read', 'abort', 'delete'],
  user: ['read', 'create', 'delete', ...update('name', 'password', 'permission', 'preferences')],
  group: ['read', 'create', 'delete', ...update('name', 'users')],
  'acl-role': ['read', 'create', 'delete', ...update('name', 'description', 'users', 'groups')],
  'acl-privilege': ['read', 'create', 'delete', ...update('action', 'effect', 'resource', 'selector')],
}

export const resources: readonly string[] = Object.keys(actionsByResource)

/**
 * Whether a privilege may name this action on this resource: a listed action,
 * `*`, or a parent of listed actions (`shutdown` for `shutdown:clean`).
 */
export function isGrantableAction(resource: string, action: string): boolean {
  const actions = Object.hasOwn(actionsByResource, resource) ? actionsByResource[resource] : undefined
  if (actions === undefined) return false
  return action === '*' || actions.some((known) => known === action || known.startsWith(`${action}:`))
}
