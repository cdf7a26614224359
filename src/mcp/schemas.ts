import { z } from 'zod'

/**
 * Output schemas of the tools whose results have a fixed shape. The objects
 * are loose: a compatible server may add fields, and a client validating
 * against a closed schema would then reject a correct answer.
 */

const count = z.number().int().min(0)
// null where a compatible server divided by zero (NaN becomes null in JSON)
const percent = z.number().nullable().describe('0 to 100 (may exceed 100 when overcommitted)')

export const InfrastructureSummary = z.looseObject({
  pools: z.looseObject({ total: count, names: z.array(z.string()) }),
  hosts: z.looseObject({ total: count }),
  vms: z.looseObject({
    total: count,
    running: count,
    halted: count,
    other: count.describe('paused, suspended or in any other state'),
  }),
})

export type InfrastructureSummary = z.infer<typeof InfrastructureSummary>

const topHostRam = z.looseObject({ id: z.string(), name_label: z.string(), size: z.number(), usage: z.number(), percent })
const topCpu = z.looseObject({ id: z.string(), name_label: z.string(), percent })
const topVmRam = z.looseObject({ id: z.string(), name_label: z.string(), memory: z.number(), memoryFree: z.number(), percent })
const topSr = z.looseObject({ id: z.string(), name_label: z.string(), percent, physical_usage: z.number(), size: z.number() })

export const PoolDashboard = z.looseObject({
  hosts: z.looseObject({
    status: z.looseObject({ running: count, disabled: count, halted: count, total: count }),
    topFiveUsage: z.looseObject({ ram: z.array(topHostRam), cpu: z.array(topCpu) }),
    missingPatches: z
      .looseObject({ hasAuthorization: z.boolean(), missingPatches: z.array(z.unknown()).optional() })
      .optional()
      .describe('`hasAuthorization: false` when the server cannot tell'),
  }),
  vms: z.looseObject({
    status: z.looseObject({ running: count, halted: count, paused: count, suspended: count, total: count }),
    topFiveUsage: z
      .looseObject({ cpu: z.array(topCpu), ram: z.array(topVmRam), isExpired: z.boolean().optional() })
      .optional()
      .describe('absent when the server has no recent VM statistics'),
  }),
  srs: z.looseObject({ topFiveUsage: z.array(topSr) }),
  alarms: z.array(z.string()).describe('ids of the active alarms of the pool (GET /rest/v0/alarms/<id> for each)'),
  cpuProvisioning: z.looseObject({
    total: count.describe('physical CPU cores of the pool'),
    assigned: count.describe('vCPUs of the running VMs'),
    percent,
  }),
})
