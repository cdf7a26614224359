import { Type } from '@sinclair/typebox'

export const PermissionSchema = Type.Union([Type.Literal('none'), Type.Literal('admin')])

export const UserSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('user'),
    email: Type.String(),
    name: Type.Optional(Type.String()),
    permission: PermissionSchema,
    groups: Type.Array(Type.String(), { description: 'ids of the groups the user belongs to' }),
    preferences: Type.Record(Type.String(), Type.Unknown()),
  },
  { $id: 'User', additionalProperties: false },
)

export const GroupSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('group'),
    name: Type.String(),
    users: Type.Array(Type.String(), { description: 'ids of the member users' }),
  },
  { $id: 'Group', additionalProperties: false },
)

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s]+$' })
const Password = Type.String({ minLength: 1, maxLength: 1024 })

export const CreateUserBody = Type.Object(
  {
    email: Email,
    password: Password,
    permission: Type.Optional(PermissionSchema),
    name: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
)

export const UpdateUserBody = Type.Object(
  {
    email: Type.Optional(Email),
    password: Type.Optional(Password),
    permission: Type.Optional(PermissionSchema),
    name: Type.Optional(Type.String({ maxLength: 256 })),
    preferences: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false, minProperties: 1 },
)



export const TokenRecordSchema = Type.Object(
  {
    id: Type.String({ description: 'The secret: present it as the `authenticationToken` cookie. Shown only at creation.' }),
    identifier: Type.String({ description: 'Non-secret handle used to list and revoke the token' }),
    user_id: Type.String(),
    created_at: Type.Integer({ description: 'ms since the epoch' }),
    expiration: Type.Integer({ description: 'ms since the epoch' }),
    description: Type.Optional(Type.String()),
    client: Type.Optional(Type.Object({ id: Type.String() })),
  },
  { $id: 'AuthenticationToken', additionalProperties: false },
)

export const ListedTokenSchema = Type.Omit(TokenRecordSchema, ['id'], { $id: 'AuthenticationTokenListing' })

export const CreateTokenBody = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    expiresIn: Type.Optional(
      Type.Union([Type.String({ maxLength: 100 }), Type.Number()], {
        description: 'Duration text such as "1 hour" or "30 days", or milliseconds',
      }),
    ),
    client: Type.Optional(Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
)

export const GroupBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false })
