import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LabDriver } from '../../src/driver/lab/driver.js'
import type { LabSpec } from '../../src/driver/lab/spec.js'
import type { ObjectChange, OperationContext } from '../../src/driver/types.js'
import { openDatabase, type Db } from '../../src/store/database.js'

export const NOW = Date.UTC(2025, 0, 15, 12)
/** the user recorded as the creator of the seeded VMs */
export const CREATOR = 'c0ffee00-0000-4000-8000-000000000001'
/** the user operations run as */
export const USER = 'c0ffee00-0000-4000-8000-0000000000aa'

/** What the helpers need of a test: a place to register cleanup. */
export interface TestScope {
  teardown(fn: () => unknown): void
}

export interface Lab {
  readonly dataDir: string
  readonly db: Db
  readonly driver: LabDriver
  /** every change delivered to a listener since the lab opened */
  readonly changes: ObjectChange[]
}

export interface LabOptions {
  readonly spec?: LabSpec
  readonly stepDelay?: number
  /** default: one second later at each reading from NOW, so that times move on between operations */
  readonly clock?: () => number
  /** open the lab of this data directory instead of a fresh one */
  readonly dataDir?: string
  /** leave the data directory behind (to reopen it) */
  readonly keep?: boolean
}

/** A lab driver (the demo lab unless `spec`), closed, and its data removed unless kept, when the test ends. */
export async function openLab(t: TestScope, options: LabOptions = {}): Promise<Lab> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'keel-lab-'))
  const db = openDatabase(dataDir)
  let time = NOW
  const driver = new LabDriver(db, {
    creatorId: CREATOR,
    clock: options.clock ?? (() => (time += 1000)),
    stepDelay: options.stepDelay ?? 0,
    ...(options.spec === undefined ? {} : { spec: options.spec }),
  })
  t.teardown(async () => {
    await driver.close()
    db.close()
    if (options.keep !== true) rmSync(dataDir, { recursive: true, force: true })
  })
  await driver.open()
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  return { dataDir, db, driver, changes }
}

/** Removes a data directory when the test ends. */
export function removeLater(t: TestScope, dataDir: string): void {
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
}

export interface Context extends OperationContext {
  /** every progress report, in order */
  readonly reported: number[]
  readonly controller: AbortController
}

/** An operation context whose abort controller and progress reports the test holds. */
export function context(userId = USER): Context {
  const controller = new AbortController()
  const reported: number[] = []
  return { signal: controller.signal, userId, progress: (percent) => reported.push(percent), reported, controller }
}
