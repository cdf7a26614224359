import { randomBytes } from 'node:crypto'

const hex = randomBytes(10).toString('hex')
/** Drawn once per process, so ids stay unique across restarts and several instances. */
const prefix = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`
let counter = 0

/**
 * A new request id in the 36-character shape of a UUID: this process's
 * random prefix and a counter. randomUUID builds its text piece by piece,
 * and its garbage showed in the single-object profile.
 */
export const nextRequestId = (): string => prefix + (counter++).toString(16).padStart(12, '0')
