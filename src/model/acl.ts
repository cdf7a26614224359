import { Type } from '@sinclair/typebox'

export const EffectSchema = Type.Union([Type.Literal('allow'), Type.Literal('deny')])

export const AclRoleSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('acl-role'),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    privilegeIds: Type.Array(Type.String(), { description: 'the privileges the role holds' }),
    userIds: Type.Optional(Type.Array(Type.String(), { description: 'users the role is assigned to (absent on templates)' })),
    groupIds: Type.Optional(Type.Array(Type.String(), { description: 'groups the role is assigned to (absent on templates)' })),
    isTemplate: Type.Optional(Type.Literal(true, { description: 'a built-in template: copy it to use it' })),
    roleTemplateId: Type.Optional(Type.Integer({ minimum: 1, description: 'stable key of a template (its id is random)' })),
  },
  { $id: 'AclRole', additionalProperties: false },
)

export const AclPrivilegeSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('acl-privilege'),
    roleId: Type.String(),
    resource: Type.String({ description: 'a resource of the catalogue, e.g. `vm`' }),
    action: Type.String({ description: 'an action of that resource, a parent of some (`shutdown`), or `*`' }),
    effect: EffectSchema,
    selector: Type.Optional(Type.String({ description: 'filter expression; the privilege covers the objects it matches' })),
  },
  { $id: 'AclPrivilege', additionalProperties: false },
)

const Name = Type.String({ minLength: 1, maxLength: 256 })
const Description = Type.String({ maxLength: 4096 })
const Selector = Type.String({ maxLength: 4096 })

export const CreateRoleBody = Type.Object({ name: Name, description: Type.Optional(Description) }, { additionalProperties: false })

export const UpdateRoleBody = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Type.Union([Description, Type.Null()], { description: 'null removes it' })) },
  { additionalProperties: false, minProperties: 1 },
)

export const CopyRoleBody = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Description) },
  { additionalProperties: false },
)

export const CreatePrivilegeBody = Type.Object(
  {
    roleId: Type.String({ minLength: 1 }),
    resource: Type.String({ minLength: 1, maxLength: 64 }),
    action: Type.String({ minLength: 1, maxLength: 128 }),
    effect: EffectSchema,
    selector: Type.Optional(Selector),
  },
  { additionalProperties: false },
)

export const UpdatePrivilegeBody = Type.Object(
  {
    resource: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    effect: Type.Optional(EffectSchema),
    selector: Type.Optional(Type.Union([Selector, Type.Null()], { description: 'null removes it' })),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const AclCheckBody = Type.Object(
  {
    resource: Type.String({ minLength: 1, maxLength: 64 }),
    action: Type.String({ minLength: 1, maxLength: 128 }),
    objectId: Type.Optional(Type.String({ minLength: 1 })),
    userId: Type.Optional(Type.String({ minLength: 1, description: 'administrators only: review another user' })),
  },
  { additionalProperties: false },
)

export const AclCheckResult = Type.Object(
  {
    allowed: Type.Boolean(),
    matched: Type.Array(Type.String(), { description: 'ids of the privileges that match' }),
    denying: Type.Array(Type.String(), { description: 'ids of the matching deny privileges' }),
  },
  { $id: 'AclCheckResult', additionalProperties: false },
)

export const AclAuditSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('acl-audit'),
    time: Type.Integer({ description: 'ms since the epoch' }),
    actorId: Type.String({ description: 'the user who made the change' }),
    operation: Type.String({ description: 'e.g. `create role`, `update privilege`, `attach role to user`' }),
    objectType: Type.String(),
    objectId: Type.String(),
    before: Type.Optional(Type.Unknown()),
    after: Type.Optional(Type.Unknown()),
  },
  { $id: 'AclAudit', additionalProperties: false },
)
