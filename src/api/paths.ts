/** Where the REST API lives; every route path and link starts here. */
export const BASE = '/rest/v0'

/** The link to one object of a collection, as listings and Location headers give it. */
export const hrefOf = (collection: string, id: string): string => `${BASE}/${collection}/${encodeURIComponent(id)}`
