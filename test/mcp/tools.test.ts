import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { packageRoot } from '../../src/paths.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../helpers/server.js'
import { adminId, createToken, startBridge } from './bridge.js'

const TOOLS = [
  'check_connection',
  'get_infrastructure_summary',
  'get_network_details',
  'get_pool_dashboard',
  'get_sr_details',
  'get_vm_details',
  'list_hosts',
  'list_networks',
  'list_pools',
  'list_srs',
  'list_vdis',
  'list_vms',
  'search_documentation',
]

const TOPICS = ['installation', 'configuration', 'backups', 'restapi', 'manage', 'users', 'architecture', 'troubleshooting', 'releases']

interface JsonSchema {
  type?: string
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  enum?: string[]
}

t.test('a token-authenticated bridge: every tool, with default and custom arguments, and the prompt', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const token = await createToken(server, await adminId(server), { description: 'mcp test' })
  const bridge = await startBridge({ KEEL_URL: server.url, KEEL_TOKEN: token.id })
  t.teardown(() => bridge.close())
  const rest = async <T>(path: string): Promise<T> => (await server.json<T>(path)).body

  t.test('handshake: name, version, capabilities and instructions naming the instance', async (t) => {
    t.match(bridge.client.getServerVersion(), { name: 'keel-mcp', version: /^\d+\.\d+\.\d+/ })
    t.match(bridge.client.getServerCapabilities(), { tools: {}, prompts: {} })
    t.match(bridge.client.getInstructions(), server.url)
    t.match(bridge.stderr(), /serving .* over stdio/, 'logs go to stderr')
  })

  t.test('tools/list: the 13 tools, read-only, with described inputs and output schemas where the shape is fixed', async (t) => {
    const { tools } = await bridge.client.listTools()
    t.same(tools.map((tool) => tool.name).sort(), TOOLS)
    for (const tool of tools) {
      t.match(tool.annotations, { readOnlyHint: true, openWorldHint: false }, `${tool.name} is read-only`)
      t.ok(tool.description !== undefined && tool.description.length > 20, `${tool.name} is described`)
      const properties = (tool.inputSchema as JsonSchema).properties ?? {}
      for (const [name, schema] of Object.entries(properties)) t.ok(schema.description, `${tool.name}.${name} is described`)
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool]))
    const input = (name: string): JsonSchema => byName.get(name)?.inputSchema as JsonSchema
    t.match(input('list_vms').properties?.['filter']?.description, /`power_state:Running`.*`name_label:web\*`/)
    t.match(input('list_vms').properties?.['fields']?.description, /Default: id,name_label,power_state,CPUs,memory/)
    t.match(input('list_vdis').properties?.['filter']?.description, /`VDI_type:User`.*`name_label:backup\*`/)
    t.match(input('list_srs').properties?.['filter']?.description, /`SR_type:lvm`/)
    t.match(input('list_networks').properties?.['filter']?.description, /`bridge:xenbr0`/)
    t.same(Object.keys(input('list_pools').properties ?? {}), ['fields'], 'list_pools takes fields only')
    t.same(Object.keys(input('list_hosts').properties ?? {}).sort(), ['fields', 'filter', 'limit'])
    t.same(input('get_vm_details').required, ['vm_id'])
    t.same(input('get_sr_details').required, ['sr_id'])
    t.same(input('get_network_details').required, ['network_id'])
    t.same(input('get_pool_dashboard').required, ['pool_id'])
    t.same(input('search_documentation').properties?.['topic']?.enum, TOPICS)
    t.same(Object.keys(input('check_connection').properties ?? {}), [])
    const withOutput = tools.filter((tool) => tool.outputSchema !== undefined).map((tool) => tool.name)
    t.same(withOutput.sort(), ['get_infrastructure_summary', 'get_pool_dashboard'])
  })

  t.test('check_connection', async (t) => {
    const { result, text } = await bridge.call('check_connection')
    t.notOk(result.isError)
    t.equal(text, `Connection to Keel successful: ${server.url} as the token in KEEL_TOKEN.`)
  })

  t.test('list_pools: default and custom fields', async (t) => {
    const defaults = await bridge.call('list_pools')
    t.same(JSON.parse(defaults.text), await rest('/rest/v0/pools?fields=id,name_label,name_description,auto_poweron,HA_enabled'))
    t.match(defaults.text, /^\[\n  \{/, 'pretty-printed JSON')
    const custom = await bridge.call('list_pools', { fields: 'name_label,cpus' })
    t.same(JSON.parse(custom.text), await rest('/rest/v0/pools?fields=name_label,cpus'))
  })

  t.test('list_hosts: default, then filter, fields and limit', async (t) => {
    const defaults = JSON.parse((await bridge.call('list_hosts')).text) as Array<Record<string, unknown>>
    t.equal(defaults.length, 3)
    t.same(Object.keys(defaults[0] ?? {}).sort(), ['href', 'id', 'name_label', 'power_state', 'productBrand', 'version'])
    const custom = JSON.parse((await bridge.call('list_hosts', { filter: 'name_label:xcp-ng-0', fields: 'name_label,cpus', limit: 2 })).text)
    t.same(custom, await rest('/rest/v0/hosts?fields=name_label,cpus&filter=name_label:xcp-ng-0&limit=2'))
    t.equal(custom.length, 2)
  })

  t.test('list_vms: default, the documented filter examples, and limit', async (t) => {
    const defaults = JSON.parse((await bridge.call('list_vms')).text) as Array<Record<string, unknown>>
    t.same(defaults, await rest('/rest/v0/vms?fields=id,name_label,power_state,CPUs,memory'))
    t.equal(defaults.length, 12)
    const running = JSON.parse((await bridge.call('list_vms', { filter: 'power_state:Running' })).text) as Array<{ power_state: string }>
    t.equal(running.length, 7)
    t.ok(running.every((vm) => vm.power_state === 'Running'))
    const web = JSON.parse((await bridge.call('list_vms', { filter: 'name_label:web*', fields: 'name_label' })).text) as Array<{ name_label: string }>
    t.same(web.map((vm) => vm.name_label), ['web-01', 'web-02'])
    const limited = JSON.parse((await bridge.call('list_vms', { limit: 3, fields: 'id' })).text) as unknown[]
    t.equal(limited.length, 3)
  })

  t.test('list_vdis: default and filtered', async (t) => {
    const defaults = JSON.parse((await bridge.call('list_vdis')).text)
    t.same(defaults, await rest('/rest/v0/vdis?fields=id,name_label,name_description,$SR,size,usage,VDI_type'))
    const data = JSON.parse((await bridge.call('list_vdis', { filter: 'name_label:data VDI_type:User', fields: 'name_label', limit: 10 })).text)
    t.same(data.map((vdi: { name_label: string }) => vdi.name_label), ['db-01 data', 'db-02 data'])
  })

  t.test('list_srs: default and filtered', async (t) => {
    const defaults = JSON.parse((await bridge.call('list_srs')).text)
    t.same(defaults, await rest('/rest/v0/srs?fields=id,name_label,SR_type,allocationStrategy,size,usage,physical_usage,shared'))
    const lvm = JSON.parse((await bridge.call('list_srs', { filter: 'SR_type:lvm', fields: 'name_label,SR_type' })).text)
    t.same(lvm, await rest('/rest/v0/srs?fields=name_label,SR_type&filter=SR_type:lvm'))
    t.equal(lvm.length, 1)
    const shared = JSON.parse((await bridge.call('list_srs', { filter: 'shared?', fields: 'name_label' })).text)
    t.same(shared.map((sr: { name_label: string }) => sr.name_label), ['NFS shared storage', 'ISO library'])
  })

  t.test('list_networks: default and filtered', async (t) => {
    const defaults = JSON.parse((await bridge.call('list_networks')).text)
    t.same(defaults, await rest('/rest/v0/networks?fields=id,name_label,name_description,bridge,MTU,nbd'))
    const xenbr1 = JSON.parse((await bridge.call('list_networks', { filter: 'bridge:xenbr1', fields: 'name_label', limit: 1 })).text)
    t.same(xenbr1.map((network: { name_label: string }) => network.name_label), ['VM network'])
  })

  t.test('detail tools return the whole record', async (t) => {
    const [vm] = await rest<Array<{ id: string }>>('/rest/v0/vms?fields=id&limit=1')
    const [sr] = await rest<Array<{ id: string }>>('/rest/v0/srs?fields=id&limit=1')
    const [network] = await rest<Array<{ id: string }>>('/rest/v0/networks?fields=id&limit=1')
    t.same(JSON.parse((await bridge.call('get_vm_details', { vm_id: vm?.id })).text), await rest(`/rest/v0/vms/${vm?.id}`))
    t.same(JSON.parse((await bridge.call('get_sr_details', { sr_id: sr?.id })).text), await rest(`/rest/v0/srs/${sr?.id}`))
    t.same(
      JSON.parse((await bridge.call('get_network_details', { network_id: network?.id })).text),
      await rest(`/rest/v0/networks/${network?.id}`),
    )
  })

  t.test('get_infrastructure_summary: structured content, mirrored as JSON text', async (t) => {
    const { result, text } = await bridge.call('get_infrastructure_summary')
    const expected = {
      pools: { total: 1, names: ['Demo pool'] },
      hosts: { total: 3 },
      vms: { total: 12, running: 7, halted: 3, other: 2 },
    }
    t.same(result.structuredContent, expected)
    t.same(JSON.parse(text), expected)
  })

  t.test('get_pool_dashboard: the service dashboard, structured and as text', async (t) => {
    const [pool] = await rest<Array<{ id: string }>>('/rest/v0/pools?fields=id')
    const { result, text } = await bridge.call('get_pool_dashboard', { pool_id: pool?.id })
    t.notOk(result.isError, text)
    const expected = await rest(`/rest/v0/pools/${pool?.id}/dashboard`)
    t.same(result.structuredContent, expected)
    t.same(JSON.parse(text), expected)
    t.match(result.structuredContent, { hosts: { status: { total: 3 } }, vms: { status: { total: 12 } } })
  })

  t.test('search_documentation serves every bundled page', async (t) => {
    for (const topic of TOPICS) {
      const { result, text } = await bridge.call('search_documentation', { topic })
      t.notOk(result.isError, topic)
      const page = readFileSync(join(packageRoot, 'docs', `${topic}.md`), 'utf8')
      t.equal(text, `# Keel documentation: ${topic}\nSource: docs/${topic}.md (bundled with keel-mcp)\n\n${page}`)
    }
  })

  t.test('arguments are validated before any request', async (t) => {
    const badTopic = await bridge.call('search_documentation', { topic: 'kernels' })
    t.equal(badTopic.result.isError, true)
    t.match(badTopic.text, /Input validation error/)
    const badLimit = await bridge.call('list_vms', { limit: -1 })
    t.equal(badLimit.result.isError, true)
    const missingId = await bridge.call('get_vm_details', {})
    t.equal(missingId.result.isError, true)
    t.match(missingId.text, /vm_id/)
  })

  t.test('a filter the service rejects comes back as an error result', async (t) => {
    const { result, text } = await bridge.call('list_vms', { filter: 'name_label:(' })
    t.equal(result.isError, true)
    t.match(text, /^Failed to list VMs: Keel API error \(400 Bad Request\): /)
  })

  t.test('the infrastructure-overview prompt', async (t) => {
    const { prompts } = await bridge.client.listPrompts()
    t.same(
      prompts.map((prompt) => prompt.name),
      ['infrastructure-overview'],
    )
    t.notOk(prompts[0]?.arguments?.length, 'no arguments')
    const prompt = await bridge.client.getPrompt({ name: 'infrastructure-overview' })
    t.equal(prompt.messages.length, 1)
    t.equal(prompt.messages[0]?.role, 'user')
    t.match(prompt.messages[0]?.content, { type: 'text', text: /get_infrastructure_summary.*pools.*hosts.*VMs/s })
  })
})

t.test('a password-authenticated bridge, and the XO_* names', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())

  t.test('KEEL_USERNAME and KEEL_PASSWORD', async (t) => {
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_USERNAME: ADMIN_EMAIL, KEEL_PASSWORD: ADMIN_PASSWORD })
    t.teardown(() => bridge.close())
    t.equal((await bridge.call('check_connection')).text, `Connection to Keel successful: ${server.url} as user ${ADMIN_EMAIL}.`)
    const summary = await bridge.call('get_infrastructure_summary')
    t.match(summary.result.structuredContent, { vms: { total: 12 } })
    const vms = JSON.parse((await bridge.call('list_vms', { filter: 'power_state:Halted', fields: 'name_label' })).text) as unknown[]
    t.equal(vms.length, 3)
  })

  t.test('XO_URL with XO_USERNAME and XO_PASSWORD, and a trailing slash on the URL', async (t) => {
    const bridge = await startBridge({ XO_URL: server.url + '/', XO_USERNAME: ADMIN_EMAIL, XO_PASSWORD: ADMIN_PASSWORD })
    t.teardown(() => bridge.close())
    t.equal((await bridge.call('check_connection')).text, `Connection to Keel successful: ${server.url} as user ${ADMIN_EMAIL}.`)
  })

  t.test('XO_TOKEN, and the token wins over a (wrong) username and password', async (t) => {
    const token = await createToken(server, await adminId(server))
    const bridge = await startBridge({ XO_URL: server.url, XO_TOKEN: token.id, KEEL_USERNAME: ADMIN_EMAIL, KEEL_PASSWORD: 'wrong' })
    t.teardown(() => bridge.close())
    const { result, text } = await bridge.call('check_connection')
    t.notOk(result.isError, text)
    t.equal(text, `Connection to Keel successful: ${server.url} as the token in XO_TOKEN.`)
  })
})
