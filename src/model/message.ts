import { Type, type Static } from '@sinclair/typebox'
import { Seconds, xapiRecord } from './schema-helpers.js'

export const MessageSchema = xapiRecord(
  'Message',
  'message',
  {
    name: Type.String({ description: 'event name, e.g. VM_STARTED or ALARM' }),
    body: Type.String(),
    time: Seconds('when the event happened'),
    $object: Type.String({ description: 'uuid of the object the message is about' }),
  },
  'A message (event notification) raised by the hypervisor',
)

export type MessageRecord = Static<typeof MessageSchema>
