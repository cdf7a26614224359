import type { PrivilegeSet } from '../acl/evaluate.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import type { Visibilities, Visibility } from '../acl/visibility.js'
import type { Formatter } from '../events/feeds.js'

/**
 * What a long-lived stream may show its user of one collection, asked again
 * whenever access control changes: a role, group or tag change takes effect
 * on the next event of an open stream. Undefined for administrators and for
 * collections without a resource.
 */
export function streamAccess(
  principal: Principal,
  resource: string | undefined,
  deps: { readonly scopeOf: (userId: string) => PrivilegeSet; readonly visibilities: Visibilities },
): () => Visibility | undefined {
  if (isAdmin(principal) || resource === undefined) return () => undefined
  return () => deps.visibilities.of(deps.scopeOf(principal.id), resource)
}

/**
 * A subscription's frames as its user sees them: an object entering what the
 * user may read arrives as added (whatever the change), one leaving it as
 * removed, and the rest not at all.
 */
export function judgedFormat(format: Formatter, visible: ((record: object) => boolean) | undefined): Formatter {
  if (visible === undefined) return format
  return (event) => {
    const now = event.after !== undefined && visible(event.after)
    const was = event.before !== undefined && visible(event.before)
    if (now && was) return format(event)
    if (now) return format({ ...event, kind: 'add', before: undefined })
    if (was) return format({ ...event, kind: 'remove', after: undefined })
    return undefined
  }
}
