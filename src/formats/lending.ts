/**
 * Buffers whose owner wants them back: the block pool's blocks, a worker's
 * shared output slots. The owner lends a buffer with what to do on its return;
 * its last user (the socket write that sent it, the import that wrote it)
 * gives it back once, when it no longer reads it. A buffer nobody lent is
 * ignored, so users give back whatever they were handed. A pool block never
 * given back is simply collected; a worker's output slot is needed back for
 * its stream to go on.
 */
const owners = new WeakMap<Uint8Array, () => void>()

export function lend<T extends Uint8Array>(buffer: T, onReturn: () => void): T {
  owners.set(buffer, onReturn)
  return buffer
}

/** Hands a buffer back to whoever lent it; a second call, or one for a buffer nobody lent, does nothing. */
export function giveBack(buffer: Uint8Array): void {
  const onReturn = owners.get(buffer)
  if (onReturn === undefined) return
  owners.delete(buffer)
  onReturn()
}
