import type { NetworkRecord, VmRecord } from '../../../model/records.js'
import { dottedIpv4 } from '../expand-devices.js'
import { LabRandom } from '../random.js'
import type { Frozen, Plan } from './plan.js'

interface Subnet {
  /** network address as an unsigned 32-bit integer */
  readonly base: number
  readonly prefix: number
}

/** Guests get addresses from .100 on, clear of gateways and hosts, as the seeded lab does. */
const FIRST_GUEST = 100
const random = new LabRandom(0x1ab)

const parseIpv4 = (text: string): number | undefined => {
  const octets = text.split('.').map(Number)
  if (octets.length !== 4 || octets.some((octet) => !Number.isInteger(octet) || octet < 0 || octet > 255)) return undefined
  return octets.reduce((ip, octet) => ip * 256 + octet, 0)
}

const maskOf = (prefix: number): number => (0xffffffff << (32 - prefix)) >>> 0

/**
 * Records do not keep a network's subnet, so it is read back from what shows
 * it: a host's address on the network, else a guest's (as a /24), else one
 * derived from the network's id so that it stays the same every time.
 */
function subnetOf(plan: Plan, network: Frozen<NetworkRecord>): Subnet {
  for (const id of network.PIFs) {
    const pif = plan.find(id)
    const ip = parseIpv4(String(pif?.['ip'] ?? ''))
    const mask = parseIpv4(String(pif?.['netmask'] ?? ''))
    if (ip !== undefined && mask !== undefined && mask !== 0) {
      const prefix = 32 - Math.log2(2 ** 32 - mask)
      if (Number.isInteger(prefix)) return { base: (ip & mask) >>> 0, prefix }
    }
  }
  for (const address of guestAddresses(plan, network)) {
    const ip = parseIpv4(address)
    if (ip !== undefined) return { base: (ip & maskOf(24)) >>> 0, prefix: 24 }
  }
  const hash = random.stream(network.id)()
  return { base: parseIpv4(`10.${200 + (hash % 50)}.${(hash >>> 8) & 0xff}.0`) ?? 0, prefix: 24 }
}

function* guestAddresses(plan: Plan, network: Frozen<NetworkRecord>): Generator<string> {
  for (const id of network.VIFs) {
    const vif = plan.find(id)
    const vm = vif === undefined ? undefined : plan.find(String(vif['$VM']))
    if (vif === undefined || vm?.type !== 'VM') continue
    const address = (vm['addresses'] as Record<string, string>)[`${String(vif['device'])}/ipv4/0`]
    if (address !== undefined) yield address
  }
}

function usedAddresses(plan: Plan, network: Frozen<NetworkRecord>): Set<string> {
  const used = new Set(guestAddresses(plan, network))
  for (const id of network.PIFs) {
    const ip = plan.find(id)?.['ip']
    if (typeof ip === 'string' && ip !== '') used.add(ip)
  }
  return used
}

/**
 * Gives each VIF of a starting VM an address in its network, as DHCP would:
 * the one it had if still free, else the lowest free one from .100. A full
 * network leaves the VIF without one.
 */
export function assignAddresses(plan: Plan, vm: VmRecord): void {
  const previous = vm.addresses
  // Written as they are chosen, so that two VIFs on one network get two addresses.
  vm.addresses = {}
  const vifs = vm.VIFs.map((id) => plan.get(id, 'VIF')).sort((a, b) => Number(a.device) - Number(b.device))
  for (const vif of vifs) {
    const key = `${vif.device}/ipv4/0`
    const network = plan.get(vif.$network, 'network')
    const used = usedAddresses(plan, network)
    const kept = previous[key]
    const address = kept !== undefined && !used.has(kept) ? kept : freeAddress(subnetOf(plan, network), used)
    if (address !== undefined) vm.addresses[key] = address
  }
  const main = vm.addresses['0/ipv4/0'] ?? Object.values(vm.addresses)[0]
  if (main === undefined) delete vm.mainIpAddress
  else vm.mainIpAddress = main
}

function freeAddress({ base, prefix }: Subnet, used: ReadonlySet<string>): string | undefined {
  const last = 2 ** (32 - prefix) - 2
  for (let host = FIRST_GUEST; host <= last; host++) {
    const address = dottedIpv4((base + host) >>> 0)
    if (!used.has(address)) return address
  }
  return undefined
}
