import { Type, type Static } from '@sinclair/typebox'
import type { XoRecord } from '../driver/types.js'
import type { MessageRecord } from './message.js'
import { xapiRecord } from './schema-helpers.js'

export const AlarmSchema = xapiRecord(
  'Alarm',
  'message',
  {
    name: Type.String({ description: 'ALARM, BOND_STATUS_CHANGED or MULTIPATH_PERIODIC_ALERT' }),
    body: Type.Object(
      {
        value: Type.Optional(
          Type.String({ description: 'measured value as a percentage with one decimal (a string: it may be NaN or Infinity)' }),
        ),
        name: Type.String({ description: 'the metric (e.g. cpu_usage), or the raw body for non-perfmon alarms' }),
      },
      { additionalProperties: false },
    ),
    object: Type.Object(
      {
        type: Type.String({ description: 'type of the object, or `unknown` when it is not known' }),
        uuid: Type.String(),
        href: Type.Optional(Type.String({ description: 'REST path of the object, when it is known' })),
      },
      { additionalProperties: false, description: 'the object the alarm is about' },
    ),
    time: Type.Integer({ description: 'when the alarm was raised (ms since the epoch)' }),
  },
  'An alarm: the REST view of an alarm message; `type` stays `message`',
)

export type AlarmRecord = Static<typeof AlarmSchema>

const ALARM_NAMES: ReadonlySet<unknown> = new Set(['ALARM', 'BOND_STATUS_CHANGED', 'MULTIPATH_PERIODIC_ALERT'])

// XAPI perfmon bodies read `value: 0.95\nconfig:\n<variable>\n<name value="cpu_usage"/>…`; this is the
// pattern Xen Orchestra parses them with (rest-api alarm.service.mts), so odd bodies degrade the same way.
const PERFMON_BODY = /^value:\s*(Infinity|NaN|-Infinity|\d+(?:\.\d+)?)\s*config:\s*<variable>\s*<name value="(.*?)"/

/**
 * The alarm view of a message, or undefined when the message is not an alarm.
 * `getObject` resolves the message's object so the alarm can name its type,
 * and `linkOf` gives its href; without them (or when the object is gone) the
 * type is `unknown`.
 */
export function messageToAlarm(
  message: XoRecord,
  getObject?: (id: string) => XoRecord | undefined,
  linkOf?: (object: XoRecord) => string | undefined,
): AlarmRecord | undefined {
  if (message.type !== 'message' || !ALARM_NAMES.has(message['name'])) return undefined
  const { $object, body, time, ...rest } = message as MessageRecord
  const match = PERFMON_BODY.exec(body)
  const rawValue = match?.[1]
  const target = getObject?.($object)
  const href = target === undefined ? undefined : linkOf?.(target)
  return {
    ...rest,
    body: {
      ...(rawValue === undefined ? {} : { value: Number.isFinite(+rawValue) ? (+rawValue * 100).toFixed(1) : rawValue }),
      name: match?.[2] ?? body,
    },
    object:
      target === undefined
        ? { type: 'unknown', uuid: $object }
        : { type: target.type, uuid: $object, ...(href === undefined ? {} : { href }) },
    time: time * 1000,
  }
}
