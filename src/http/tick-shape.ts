import { createHook } from 'node:async_hooks'

/**
 * One of node's tick objects, held for the life of the process so that V8 never frees their shape.
 *
 * Node 20's `process.nextTick` builds each tick as an object literal with two computed symbol
 * keys. V8 keeps the one shape each such key was defined on as that site's feedback, and turns the
 * site megamorphic for good the first time it meets another shape; a freed shape counts as another.
 * A full GC that runs while no tick object is alive frees the shape, and optimized stream code
 * then defines both keys through V8's runtime on every tick, several a request: 2 µs more CPU
 * per single-object read (bench/RESULTS.md, 2026-11-25).
 *
 * Returns the held tick, so that a test sees node still reports its ticks to async hooks.
 */
let held: object | undefined

export function holdTickShape(): object | undefined {
  if (held !== undefined) return held
  // Hooks are on only while one tick is scheduled: an enabled hook costs every asynchronous operation.
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') held ??= resource
    },
  })
  hook.enable()
  process.nextTick(() => {})
  hook.disable()
  return held
}
