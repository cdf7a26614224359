/** What Keel asks of a new disk through XAPI: a user disk, neither shared nor read-only, with nothing else set. */
export interface NewVdiFields {
  readonly name_label: string
  readonly name_description: string
  /** the SR's ref */
  readonly SR: string
  readonly virtual_size: number
}

/** The record `VDI.create` takes for such a disk: XAPI requires every one of these fields. */
export const newVdiRecord = (fields: NewVdiFields): Record<string, unknown> => ({
  ...fields,
  type: 'user',
  sharable: false,
  read_only: false,
  other_config: {},
  xenstore_data: {},
  sm_config: {},
  tags: [],
})
