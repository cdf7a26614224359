import { Type } from '@sinclair/typebox'

export const TaskStatusSchema = Type.Union([
  Type.Literal('pending'),
  Type.Literal('success'),
  Type.Literal('failure'),
  Type.Literal('interrupted'),
])

export const TaskSchema = Type.Object(
  {
    id: Type.String({ description: 'Time-sortable identifier' }),
    type: Type.Literal('task'),
    properties: Type.Object(
      {
        name: Type.String(),
        objectId: Type.Optional(Type.String()),
        objectType: Type.Optional(Type.String()),
        userId: Type.Optional(Type.String()),
        type: Type.Optional(Type.String()),
        params: Type.Optional(Type.Unknown()),
        progress: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
        bytes: Type.Optional(
          Type.Object(
            { done: Type.Integer({ minimum: 0 }), total: Type.Optional(Type.Integer({ minimum: 0 })) },
            { additionalProperties: false, description: 'Bytes a transfer has moved, of how many when known' },
          ),
        ),
      },
      { additionalProperties: true },
    ),
    start: Type.Integer({ description: 'ms since the epoch' }),
    updatedAt: Type.Integer({ description: 'ms since the epoch of the last change' }),
    end: Type.Optional(Type.Integer()),
    status: TaskStatusSchema,
    result: Type.Optional(Type.Unknown()),
    abortionRequestedAt: Type.Optional(Type.Integer()),
  },
  { $id: 'Task', additionalProperties: false },
)
