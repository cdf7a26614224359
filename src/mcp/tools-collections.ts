import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import type { RestClient } from './client.js'
import { attempt, jsonResult, READ_ONLY } from './results.js'

/**
 * The listing and detail tools. Names, parameters and default `fields` are
 * the reference bridge's (spec 3), so prompts written for it keep working;
 * each one is a single GET on the matching REST collection.
 */

interface ListingTool {
  readonly name: string
  readonly title: string
  /** plural noun, as in "list <what>" */
  readonly what: string
  readonly collection: string
  readonly defaultFields: string
  /** absent: the tool takes `fields` only (as list_pools does in spec 3) */
  readonly filterExamples?: readonly string[]
}

interface DetailTool {
  readonly name: string
  readonly title: string
  readonly what: string
  readonly collection: string
  readonly param: string
  readonly idDescription: string
  readonly listTool: string
}

const LISTINGS: readonly ListingTool[] = [
  { name: 'list_pools', title: 'List Pools', what: 'pools', collection: 'pools', defaultFields: 'id,name_label,name_description,auto_poweron,HA_enabled' },
  {
    name: 'list_hosts',
    title: 'List Hosts',
    what: 'hosts',
    collection: 'hosts',
    defaultFields: 'id,name_label,productBrand,version,power_state',
    filterExamples: ['power_state:Running', 'productBrand:XCP-ng', 'enabled?'],
  },
  {
    name: 'list_vms',
    title: 'List Virtual Machines',
    what: 'VMs',
    collection: 'vms',
    defaultFields: 'id,name_label,power_state,CPUs,memory',
    filterExamples: ['power_state:Running', 'name_label:web*', 'tags:prod'],
  },
  {
    name: 'list_vdis',
    title: 'List Virtual Disks',
    what: 'VDIs (virtual disks)',
    collection: 'vdis',
    defaultFields: 'id,name_label,name_description,$SR,size,usage,VDI_type',
    filterExamples: ['VDI_type:User', 'name_label:backup*'],
  },
  {
    name: 'list_srs',
    title: 'List Storage Repositories',
    what: 'SRs (storage repositories)',
    collection: 'srs',
    defaultFields: 'id,name_label,SR_type,allocationStrategy,size,usage,physical_usage,shared',
    // `shared?` rather than the reference's `shared:true`: a value term matches strings, never the boolean.
    filterExamples: ['SR_type:lvm', 'shared?', 'SR_type:nfs'],
  },
  {
    name: 'list_networks',
    title: 'List Networks',
    what: 'networks',
    collection: 'networks',
    defaultFields: 'id,name_label,name_description,bridge,MTU,nbd',
    filterExamples: ['bridge:xenbr0', 'name_label:"VM network"'],
  },
]

const DETAILS: readonly DetailTool[] = [
  {
    name: 'get_vm_details',
    title: 'Get VM Details',
    what: 'VM',
    collection: 'vms',
    param: 'vm_id',
    idDescription: 'VM id or UUID (the `id` field of list_vms)',
    listTool: 'list_vms',
  },
  {
    name: 'get_sr_details',
    title: 'Get SR Details',
    what: 'SR',
    collection: 'srs',
    param: 'sr_id',
    idDescription: 'SR id or UUID (the `id` field of list_srs)',
    listTool: 'list_srs',
  },
  {
    name: 'get_network_details',
    title: 'Get Network Details',
    what: 'network',
    collection: 'networks',
    param: 'network_id',
    idDescription: 'network id (the `id` field of list_networks)',
    listTool: 'list_networks',
  },
]

interface ListingArgs {
  filter?: string | undefined
  fields?: string | undefined
  limit?: number | undefined
}

const FILTER_SYNTAX =
  'Filter expression in the REST API search syntax: `field:value` matches a case-insensitive substring, `*` is a wildcard, ' +
  'terms separated by spaces must all match, `|(a b)` is OR, `!term` negates, `field:>=N` compares numbers, `field?` tests truthiness, ' +
  'values with spaces or punctuation go in double quotes.'

function listingSchema(tool: ListingTool): z.ZodType<ListingArgs> {
  const fields = z
    .string()
    .min(1)
    .optional()
    .describe(
      `Comma-separated fields to return for each object (dotted paths pick nested values; \`*\` returns whole records). Default: ${tool.defaultFields}`,
    )
  if (tool.filterExamples === undefined) return z.object({ fields })
  const examples = tool.filterExamples.map((example) => `\`${example}\``).join(', ')
  return z.object({
    filter: z
      .string()
      .optional()
      .describe(`${FILTER_SYNTAX} Examples: ${examples}`),
    fields,
    limit: z.number().int().min(0).optional().describe(`Maximum number of ${tool.what} to return (default: all)`),
  })
}

function registerListing(server: McpServer, client: RestClient, tool: ListingTool): void {
  const filtering = tool.filterExamples === undefined ? '' : ' with optional filtering'
  server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: `List the ${tool.what} of the Keel instance${filtering}. Each item has the requested fields plus its \`href\`.`,
      inputSchema: listingSchema(tool),
      annotations: { title: tool.title, ...READ_ONLY },
    },
    (args) =>
      attempt(`list ${tool.what}`, async () =>
        jsonResult(
          await client.get(`/${tool.collection}`, {
            fields: args.fields ?? tool.defaultFields,
            filter: args.filter,
            limit: args.limit,
          }),
        ),
      ),
  )
}

function registerDetail(server: McpServer, client: RestClient, tool: DetailTool): void {
  server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: `Get every field of one ${tool.what} of the Keel instance.`,
      inputSchema: z.object({ [tool.param]: z.string().min(1).describe(tool.idDescription) }),
      annotations: { title: tool.title, ...READ_ONLY },
    },
    (args) => {
      const id = args[tool.param] as string
      return attempt(
        `get ${tool.what} details`,
        async () => jsonResult(await client.get(`/${tool.collection}/${encodeURIComponent(id)}`)),
        `Use ${tool.listTool} to find valid ids.`,
      )
    },
  )
}

export function registerCollectionTools(server: McpServer, client: RestClient): void {
  for (const tool of LISTINGS) registerListing(server, client, tool)
  for (const tool of DETAILS) registerDetail(server, client, tool)
}
