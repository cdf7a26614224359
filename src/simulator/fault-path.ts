import type { IncomingMessage } from 'node:http'

/** Where the faults are posted. */
const FAULTS_PATH = '/simulator/faults'

export const isFaultRequest = (request: IncomingMessage): boolean => new URL(request.url ?? '/', 'http://simulator').pathname === FAULTS_PATH
