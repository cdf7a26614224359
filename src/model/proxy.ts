import { Type, type Static } from '@sinclair/typebox'

export const ProxySchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('proxy'),
    name: Type.String(),
    url: Type.String({ description: 'where the proxy answers, without the credentials the configured URL may carry' }),
    version: Type.Optional(Type.String()),
    address: Type.Optional(Type.String({ description: 'host[:port] of the proxy' })),
    vmUuid: Type.Optional(Type.String({ description: 'the VM the proxy runs in' })),
  },
  { $id: 'Proxy', additionalProperties: false },
)

export type ProxyRecord = Static<typeof ProxySchema>
