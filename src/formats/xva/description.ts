/** What Keel carries of a VM through an XVA: the archive's description, before or after ova.xml. */

/** What an XVA says about one disk of the VM. */
export interface XvaDisk {
  readonly uuid: string
  readonly name_label: string
  readonly name_description: string
  /** bytes; the chunks cover exactly this many */
  readonly virtual_size: number
  readonly device: string
  readonly userdevice: string
  readonly bootable: boolean
  readonly mode: 'RW' | 'RO'
}

export interface XvaVif {
  readonly uuid: string
  readonly device: string
  readonly MAC: string
  readonly MTU: number
  readonly network_name_label: string
}

/** The VM fields Keel carries through an XVA; everything else takes the known-good defaults. */
export interface XvaVm {
  readonly uuid: string
  readonly name_label: string
  readonly name_description: string
  readonly memory_static_max: number
  readonly memory_dynamic_max: number
  readonly memory_dynamic_min: number
  readonly memory_static_min: number
  readonly VCPUs_max: number
  readonly VCPUs_at_startup: number
  readonly is_a_template: boolean
  readonly tags: readonly string[]
  readonly other_config: Readonly<Record<string, string>>
}

export interface XvaDescription {
  readonly vm: XvaVm
  /** in streaming order */
  readonly disks: readonly XvaDisk[]
  readonly vifs: readonly XvaVif[]
}
