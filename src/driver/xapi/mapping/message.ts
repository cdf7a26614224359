import { base, seconds, text, type Fields, type MappingContext, type XapiObject } from './context.js'

export function messageRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const object = text(r['obj_uuid'])
  return {
    ...base('message', uuid, uuid, ref, context.poolId),
    name: text(r['name']),
    body: text(r['body']),
    time: seconds(r['timestamp']),
    $object: context.idOfUuid(object) ?? object,
  }
}
