import type { UsageFigures, XoRecord } from '../types.js'
import { LabRandom } from './random.js'

const random = new LabRandom(0x05a9e)

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const TAU = 2 * Math.PI

interface Character {
  /** resting CPU level */
  readonly base: number
  readonly fastPeriod: number
  readonly slowPeriod: number
  readonly fastPhase: number
  readonly slowPhase: number
  /** resting memory level as a fraction of the size, for guests that report none */
  readonly memoryBase: number
}

function characterOf(id: string): Character {
  const next = random.stream(id)
  const unit = (): number => next() / 2 ** 32
  return {
    base: 0.05 + 0.4 * unit(),
    fastPeriod: 10 * MINUTE + 20 * MINUTE * unit(),
    slowPeriod: HOUR + 3 * HOUR * unit(),
    fastPhase: TAU * unit(),
    slowPhase: TAU * unit(),
    memoryBase: 0.3 + 0.5 * unit(),
  }
}

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value))

/** -1 to 1: mostly the fast wave, shifted by the slow one. */
function wave(character: Character, now: number): number {
  return (
    0.65 * Math.sin((TAU * now) / character.fastPeriod + character.fastPhase) +
    0.35 * Math.sin((TAU * now) / character.slowPeriod + character.slowPhase)
  )
}

function memoryOf(record: XoRecord): { size: number; usage: number | undefined } {
  const memory = record['memory'] as { size?: unknown; usage?: unknown } | undefined
  const size = typeof memory?.size === 'number' ? memory.size : 0
  return { size, usage: typeof memory?.usage === 'number' ? memory.usage : undefined }
}

function hostUsage(record: XoRecord, now: number): UsageFigures {
  if (record['power_state'] !== 'Running') return { cpu: 0, memory: 0 }
  const character = characterOf(record.id)
  const w = wave(character, now)
  const { size, usage } = memoryOf(record)
  // Host memory is what the control domain and resident VMs hold; only Xen's own overhead moves, a little.
  const memory = clamp((usage ?? 0) + 0.01 * size * (1 + w), 0, size)
  return { cpu: clamp(character.base + 0.12 * w, 0.01, 0.99), memory: Math.round(memory) }
}

function vmUsage(record: XoRecord, now: number): UsageFigures {
  const state = record['power_state']
  if (state !== 'Running' && state !== 'Paused') return { cpu: 0, memory: 0 }
  const character = characterOf(record.id)
  const { size, usage } = memoryOf(record)
  const resting = usage ?? character.memoryBase * size
  // A paused guest is frozen: no CPU, and its memory stays as it was.
  if (state === 'Paused') return { cpu: 0, memory: Math.round(resting) }
  const w = wave(character, now)
  return {
    cpu: clamp(character.base + 0.15 * w, 0.005, 0.99),
    memory: Math.round(clamp(resting + 0.04 * size * w, 0, size)),
  }
}

/**
 * Live usage figures for lab objects, the part of a real pool's RRD
 * statistics the dashboard needs. They are a pure function of the object and
 * the time: two smooth waves with id-derived phases and periods (minutes and
 * hours) around an id-derived base, so each object has its own character,
 * figures drift slowly, and a restart or a second process shows the same
 * values at the same moment.
 */
export function labUsage(record: XoRecord, now: number): UsageFigures {
  if (record.type === 'host') return hostUsage(record, now)
  if (record.type === 'VM') return vmUsage(record, now)
  return { cpu: 0 }
}
