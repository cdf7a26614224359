import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { recordSchemas } from '../../src/model/records.js'

/** Checks a value against one type's schema: undefined when it is valid, else what is wrong. */
export type RecordValidator = (value: unknown) => string | undefined

/**
 * A validator per record type, in Ajv strict mode. Compiled from a JSON copy
 * of each schema: what the OpenAPI document and serializers see, not TypeBox objects.
 */
export function compileAll(): Map<string, RecordValidator> {
  const ajv = new Ajv({ strict: true, allErrors: true })
  addFormats.default(ajv)
  const validators = new Map<string, RecordValidator>()
  for (const [type, schema] of Object.entries(recordSchemas)) {
    const validate = ajv.compile(JSON.parse(JSON.stringify(schema)) as object)
    validators.set(type, (value) => (validate(value) ? undefined : ajv.errorsText(validate.errors)))
  }
  return validators
}
