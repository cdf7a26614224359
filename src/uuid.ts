/**
 * A UUID as Keel, XAPI and the reference print them: lower-case hex, 8-4-4-4-12.
 * Upper case is refused on purpose. Every UUID checked against this either
 * becomes part of a file path or must equal an id Keel handed out; another
 * spelling of it would name a file that is not there (or, on a
 * case-insensitive volume, the same file under a second name).
 */
export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

const UUID = new RegExp(`^${UUID_PATTERN}$`)

export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value)
