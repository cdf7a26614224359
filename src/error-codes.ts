/**
 * Every stable error code Keel sends, and the HTTP status it answers with:
 * the one table (src/http/error-response.ts applies it). A code is a key of
 * this table or it does not compile, so no code can reach a client as an
 * unexplained 500. test/errors/catalogue.test.ts holds this table, the codes
 * the sources raise and README's table against each other.
 */
export const errorStatus = {
  INVALID_JSON: 400,
  BAD_QUERY_PARAMETER: 400,
  FILTER_PARSE_ERROR: 400,
  FILTER_TOO_COMPLEX: 400,
  AMBIGUOUS_CREDENTIALS: 400,
  MALFORMED_REQUEST: 400,
  MALFORMED_AUTHORIZATION: 400,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  NOT_ENOUGH_PRIVILEGES: 403,
  REPOSITORY_OUTSIDE_ROOTS: 403,
  CROSS_SITE_REQUEST: 403,
  NO_SUCH_OBJECT: 404,
  NO_SUCH_ROUTE: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  OBJECT_ALREADY_EXISTS: 409,
  INCORRECT_STATE: 409,
  ABORTED: 409,
  POOL_ALREADY_CONNECTED: 409,
  SERVER_CREDENTIALS_UNREADABLE: 409,
  LENGTH_REQUIRED: 411,
  BODY_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  INVALID_PARAMETERS: 422,
  INVALID_DISK_STREAM: 422,
  DISK_TOO_LARGE: 422,
  DISK_SIZE_MISMATCH: 422,
  TOO_MANY_CONSOLES: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  XAPI_ERROR: 500,
  NOT_IMPLEMENTED: 501,
  XAPI_DRIVER_REQUIRED: 501,
  SERVER_CONNECTION_FAILED: 502,
  CERTIFICATE_CHANGED: 502,
  SERVICE_UNAVAILABLE: 503,
  INDEX_TIMEOUT: 504,
} as const satisfies Readonly<Record<string, number>>

export type ErrorCode = keyof typeof errorStatus
