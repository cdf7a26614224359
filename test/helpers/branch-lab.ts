import type { LabSpec } from '../../src/driver/lab/spec.js'

/** A pool of one host to join another: a local SR, a DMZ network the demo pool lacks, a template and a halted VM of its own; `shared` adds an NFS SR. */
export function branchLab(options: { shared?: boolean; vm?: boolean } = {}): LabSpec {
  return {
    pools: [
      {
        name: options.shared === true ? 'Shared branch' : 'Branch pool',
        hosts: [{ name: 'branch-01', address: '10.0.9.11', sockets: 1, cores: 8, memory: '64 GiB' }],
        networks: [
          { name: 'Branch management', device: 'eth0', subnet: '10.0.9.0/24', management: true },
          { name: 'Branch DMZ', device: 'eth3', subnet: '10.0.10.0/24' },
        ],
        srs: [{ name: 'Branch local storage', driver: 'lvm', size: '500 GiB', host: 'branch-01' }, ...(options.shared === true ? [{ name: 'Branch NFS', driver: 'nfs' as const, size: '1 TiB' }] : [])],
        templates: options.vm === false ? [] : [{ name: 'Branch Debian', os: 'debian-12', cpus: 1, memory: '1 GiB', disk: '10 GiB', default: false }],
        vms:
          options.vm === false
            ? []
            : [{ name: 'branch-app', template: 'Branch Debian', power: 'Halted', cpus: 1, memory: '1 GiB', disks: [{ size: '10 GiB', sr: 'Branch local storage' }], networks: ['Branch DMZ'] }],
      },
    ],
  }
}
