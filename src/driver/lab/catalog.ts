import type { SrDriver } from './spec.js'

/**
 * Static facts the lab draws its plausible values from: guest operating
 * systems, storage drivers and host hardware, modelled on XCP-ng 8.3.
 */

export interface OsProfile {
  readonly family: 'linux' | 'windows'
  readonly firmware: 'bios' | 'uefi'
  /** `install-arch` of the default template, when XCP-ng sets one */
  readonly arch?: string
  readonly installMethods: readonly string[]
  /** what the guest agent reports (XAPI guest_metrics.os_version) */
  readonly osVersion: Readonly<Record<string, string>>
  readonly pvDriversVersion: string
}

const LINUX_INSTALL = ['cdrom', 'nfs', 'http', 'ftp']
const LINUX_TOOLS = '8.3.0-1'
const WINDOWS_TOOLS = '9.4.0-146'

export const OS_PROFILES: Readonly<Record<string, OsProfile>> = {
  'debian-12': {
    family: 'linux',
    firmware: 'bios',
    arch: 'amd64',
    installMethods: LINUX_INSTALL,
    osVersion: { name: 'Debian GNU/Linux 12 (bookworm)', uname: '6.1.0-25-amd64', distro: 'debian', major: '12', minor: '7' },
    pvDriversVersion: LINUX_TOOLS,
  },
  'ubuntu-24.04': {
    family: 'linux',
    firmware: 'uefi',
    arch: 'amd64',
    installMethods: ['cdrom'],
    osVersion: { name: 'Ubuntu 24.04.1 LTS', uname: '6.8.0-45-generic', distro: 'ubuntu', major: '24', minor: '04' },
    pvDriversVersion: LINUX_TOOLS,
  },
  'rocky-9': {
    family: 'linux',
    firmware: 'uefi',
    arch: 'x86_64',
    installMethods: LINUX_INSTALL,
    osVersion: { name: 'Rocky Linux 9.4 (Blue Onyx)', uname: '5.14.0-427.13.1.el9_4.x86_64', distro: 'rocky', major: '9', minor: '4' },
    pvDriversVersion: LINUX_TOOLS,
  },
  'alpine-3': {
    family: 'linux',
    firmware: 'bios',
    installMethods: ['cdrom'],
    osVersion: { name: 'Alpine Linux v3.20', uname: '6.6.49-0-virt', distro: 'alpine', major: '3', minor: '20' },
    pvDriversVersion: LINUX_TOOLS,
  },
  'windows-2022': {
    family: 'windows',
    firmware: 'uefi',
    installMethods: ['cdrom'],
    osVersion: {
      name: 'Microsoft Windows Server 2022 Standard|C:\\Windows|\\Device\\Harddisk0\\Partition2',
      distro: 'windows',
      major: '10',
      minor: '0',
      spmajor: '0',
      spminor: '0',
    },
    pvDriversVersion: WINDOWS_TOOLS,
  },
  'windows-11': {
    family: 'windows',
    firmware: 'uefi',
    installMethods: ['cdrom'],
    osVersion: {
      name: 'Microsoft Windows 11 Pro|C:\\Windows|\\Device\\Harddisk0\\Partition3',
      distro: 'windows',
      major: '10',
      minor: '0',
      spmajor: '0',
      spminor: '0',
    },
    pvDriversVersion: WINDOWS_TOOLS,
  },
}

export interface SrDriverProfile {
  readonly shared: boolean
  readonly contentType: 'user' | 'iso'
  /** absent for drivers XO has no strategy for (iso) */
  readonly allocation?: 'thin' | 'thick'
  readonly deviceConfig: (location: string) => Record<string, string>
  /** the location used when the spec gives none */
  readonly defaultLocation: (srName: string) => string
  readonly sm: {
    readonly name_label: string
    readonly name_description: string
    readonly configuration: Readonly<Record<string, string>>
    readonly driver_filename: string
    readonly features: Readonly<Record<string, number>>
  }
}

const VHD_FEATURES = {
  SR_PROBE: 1,
  SR_UPDATE: 1,
  VDI_ACTIVATE: 1,
  VDI_ATTACH: 1,
  VDI_CLONE: 1,
  VDI_CONFIG_CBT: 1,
  VDI_CREATE: 1,
  VDI_DEACTIVATE: 1,
  VDI_DELETE: 1,
  VDI_DETACH: 1,
  VDI_GENERATE_CONFIG: 1,
  VDI_MIRROR: 1,
  VDI_READ_CACHING: 1,
  VDI_RESET_ON_BOOT: 2,
  VDI_RESIZE: 1,
  VDI_SNAPSHOT: 1,
  VDI_UPDATE: 1,
}

const LOCAL_DEVICE = { device: 'local device path (required) (e.g. /dev/sda3)' }
const slug = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, '-')

export const SR_DRIVERS: Readonly<Record<SrDriver, SrDriverProfile>> = {
  ext: {
    shared: false,
    contentType: 'user',
    allocation: 'thin',
    deviceConfig: (device) => ({ device }),
    defaultLocation: () => '/dev/disk/by-id/scsi-35000c500a1b2c3d4-part3',
    sm: {
      name_label: 'Local EXT4 VHD',
      name_description:
        'SR plugin which represents disks as VHD files stored on a local EXT4 filesystem, created inside an LVM volume',
      configuration: LOCAL_DEVICE,
      driver_filename: '/opt/xensource/sm/EXTSR',
      features: { ...VHD_FEATURES, SR_SUPPORTS_LOCAL_CACHING: 1, THIN_PROVISIONING: 1 },
    },
  },
  lvm: {
    shared: false,
    contentType: 'user',
    allocation: 'thick',
    deviceConfig: (device) => ({ device }),
    defaultLocation: () => '/dev/disk/by-id/scsi-35000c500e5f6a7b8',
    sm: {
      name_label: 'Local LVHD',
      name_description: 'SR plugin which represents disks as VHDs on Logical Volumes within a locally-attached Volume Group',
      configuration: LOCAL_DEVICE,
      driver_filename: '/opt/xensource/sm/LVMSR',
      features: VHD_FEATURES,
    },
  },
  lvmoiscsi: {
    shared: true,
    contentType: 'user',
    allocation: 'thick',
    deviceConfig: (target) => ({ target, targetIQN: 'iqn.2024-01.lab.example:storage', SCSIid: '36001405a0b1c2d3e4f5a6b7c8d9e0f1a' }),
    defaultLocation: () => '10.0.0.5',
    sm: {
      name_label: 'LVHD over iSCSI',
      name_description: 'SR plugin which represents disks as Logical Volumes within a Volume Group created on an iSCSI LUN',
      configuration: {
        SCSIid: 'The scsi_id of the destination LUN',
        target: 'IP address or hostname of the iSCSI target',
        targetIQN: 'The IQN of the target LUN group to be attached',
        chapuser: 'The username to be used during CHAP authentication',
        chappassword: 'The password to be used during CHAP authentication',
      },
      driver_filename: '/opt/xensource/sm/LVMoISCSISR',
      features: VHD_FEATURES,
    },
  },
  nfs: {
    shared: true,
    contentType: 'user',
    allocation: 'thin',
    deviceConfig: (location) => {
      const [server = location, serverpath = '/'] = location.split(':')
      return { server, serverpath, nfsversion: '4.1' }
    },
    defaultLocation: (name) => `nfs.lab.example:/exports/${slug(name)}`,
    sm: {
      name_label: 'NFS VHD',
      name_description: 'SR plugin which stores disks as VHD files on a remote NFS filesystem',
      configuration: {
        server: 'hostname or IP address',
        serverpath: 'path on remote server',
        options: 'extra options to pass to mount (deprecated) (e.g. "-o ro")',
        nfsversion: 'for type=nfs, NFS protocol version - 3, 4, 4.0, 4.1 (optional)',
      },
      driver_filename: '/opt/xensource/sm/NFSSR',
      features: { ...VHD_FEATURES, SR_CACHING: 1, THIN_PROVISIONING: 1 },
    },
  },
  smb: {
    shared: true,
    contentType: 'user',
    allocation: 'thin',
    deviceConfig: (server) => ({ server, username: 'xcp', password: '* obfuscated *' }),
    defaultLocation: (name) => `//smb.lab.example/${slug(name)}`,
    sm: {
      name_label: 'SMB VHD',
      name_description: 'SR plugin which stores disks as VHD files on a remote SMB filesystem',
      configuration: { server: 'Full path to share root on SMB server', username: 'The username', password: 'The password' },
      driver_filename: '/opt/xensource/sm/SMBSR',
      features: { ...VHD_FEATURES, THIN_PROVISIONING: 1 },
    },
  },
  iso: {
    shared: true,
    contentType: 'iso',
    deviceConfig: (location) => ({ location, type: 'nfs_iso' }),
    defaultLocation: (name) => `nfs.lab.example:/exports/${slug(name)}`,
    sm: {
      name_label: 'ISO',
      name_description: 'Handles CD images stored as files in iso format',
      configuration: { location: 'path to mount (required)', type: 'cifs or nfs_iso (required)' },
      driver_filename: '/opt/xensource/sm/ISOSR',
      features: { VDI_CREATE: 1, VDI_DELETE: 1, VDI_ATTACH: 1, VDI_DETACH: 1, SR_SCAN: 1, SR_ATTACH: 1, SR_DETACH: 1 },
    },
  },
}

export const HYPERVISOR = {
  productBrand: 'XCP-ng',
  version: '8.3.0',
  platformVersion: '3.4.0',
  license: {
    sku_type: 'free',
    restrict_zstd_export: 'false',
    restrict_vtpm: 'false',
    restrict_pool_size: 'false',
    restrict_storage_xen_motion: 'false',
    enable_xha: 'true',
  },
} as const

export const HOST_HARDWARE = {
  cpu: {
    vendor: 'GenuineIntel',
    speed: '2194.843',
    modelname: 'Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz',
    family: '6',
    model: '85',
    stepping: '7',
  },
  nic: 'Intel Corporation Ethernet Controller X710 for 10GbE SFP+',
  nicSpeed: 10_000,
  bios: {
    'bios-vendor': 'Dell Inc.',
    'bios-version': '2.19.1',
    'system-manufacturer': 'Dell Inc.',
    'system-product-name': 'PowerEdge R640',
    'system-version': '',
    'oem-1': 'Xen',
    'oem-2': 'MS_VM_CERT/SHA1/bdbeb6e0a816d43fa6d3fe8aaef04c2bad9d3e3d',
  },
} as const

/** SMBIOS strings XAPI gives an HVM guest on first boot. */
export const GUEST_BIOS_STRINGS: Readonly<Record<string, string>> = {
  'bios-vendor': 'Xen',
  'bios-version': '',
  'system-manufacturer': 'Xen',
  'system-product-name': 'HVM domU',
  'system-version': '',
  'system-serial-number': '',
  'hp-rombios': '',
  'oem-1': 'Xen',
  'oem-2': 'MS_VM_CERT/SHA1/bdbeb6e0a816d43fa6d3fe8aaef04c2bad9d3e3d',
}
