import type { Explicit } from './calls.js'

/** Lifecycle messages, run on the lab's operations. */
export const actionHandlers: Readonly<Record<string, Explicit>> = {}
