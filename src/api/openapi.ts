import type { TSchema } from '@sinclair/typebox'
import type { RouteDef } from '../http/route.js'

type Json = Record<string, unknown>

/**
 * Turns TypeBox schemas into OpenAPI schema objects: named schemas (those with
 * `$id`) become components referenced by `$ref`, wherever they are nested.
 */
class SchemaRegistry {
  readonly components: Record<string, Json> = {}

  ref(schema: TSchema): Json {
    return this.#convert(JSON.parse(JSON.stringify(schema)) as unknown) as Json
  }

  #convert(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((item) => this.#convert(item))
    if (node === null || typeof node !== 'object') return node
    const object = node as Json
    const converted: Json = {}
    for (const [key, value] of Object.entries(object)) {
      if (key === '$id') continue
      // A recursive schema refers to itself by its bare `$id`, which is a component here.
      converted[key] = key === '$ref' && typeof value === 'string' && !value.startsWith('#') ? `#/components/schemas/${value}` : this.#convert(value)
    }
    const id = object['$id']
    if (typeof id !== 'string') return converted
    this.components[id] ??= converted
    return { $ref: `#/components/schemas/${id}` }
  }
}

function privilegeText(route: RouteDef): string {
  const { access } = route
  if (access.public) return 'No authentication needed.'
  if (access.authenticated) return 'Any authenticated user.'
  const parts: string[] = []
  if (access.self !== undefined) parts.push(access.self.only ? 'Only on your own account.' : 'Allowed on your own account.')
  if (access.privilege !== undefined) {
    parts.push(`Required privilege: \`${access.privilege.resource}:${access.privilege.action}\` (administrators always pass).`)
  } else if (access.self === undefined || !access.self.only) {
    parts.push('Administrators only.')
  }
  return parts.join(' ')
}

export interface OpenApiInfo {
  readonly title: string
  readonly version: string
  readonly description: string
}

export function buildOpenApi(routes: readonly RouteDef[], info: OpenApiInfo): Json {
  const registry = new SchemaRegistry()
  const paths: Record<string, Record<string, Json>> = {}
  for (const route of routes) {
    if (route.hidden) continue
    const path = route.path.replace(/:(\w+)/g, '{$1}')
    const parameters: Json[] = []
    for (const [name, schema] of Object.entries(route.params?.properties ?? {})) {
      parameters.push({ name, in: 'path', required: true, schema: registry.ref(schema) })
    }
    for (const [name, schema] of Object.entries(route.query?.properties ?? {})) {
      const { description, ...rest } = schema as TSchema & { description?: string }
      parameters.push({
        name,
        in: 'query',
        required: route.query?.required?.includes(name) ?? false,
        ...(description === undefined ? {} : { description }),
        schema: registry.ref(rest as TSchema),
        ...(rest.type === 'boolean' ? { allowEmptyValue: true } : {}),
      })
    }
    const responses: Record<string, Json> = {}
    for (const [status, spec] of Object.entries(route.responses)) {
      const content =
        spec.schema === undefined
          ? spec.contentType === undefined
            ? undefined
            : { [spec.contentType]: {} }
          : { [spec.contentType ?? 'application/json']: { schema: registry.ref(spec.schema) } }
      responses[status] = { description: spec.description, ...(content === undefined ? {} : { content }) }
    }
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      description: privilegeText(route),
      tags: route.tags,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body === undefined
        ? {}
        : {
            requestBody: {
              required: route.bodyRequired === true,
              content: { 'application/json': { schema: registry.ref(route.body) } },
            },
          }),
      responses,
      ...(route.access.public ? { security: [] } : {}),
      ...(route.access.privilege === undefined ? {} : { 'x-keel-privilege': route.access.privilege }),
    }
    ;(paths[path] ??= {})[route.method.toLowerCase()] = operation
  }
  return {
    openapi: '3.1.0',
    info,
    servers: [{ url: '/' }],
    security: [{ basicAuth: [] }, { cookieAuth: [] }],
    paths,
    components: {
      schemas: registry.components,
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'Email and password' },
        cookieAuth: {
          type: 'apiKey',
          in: 'cookie',
          name: 'authenticationToken',
          description: 'A token created with POST /rest/v0/users/{id}/authentication_tokens',
        },
      },
    },
  }
}
