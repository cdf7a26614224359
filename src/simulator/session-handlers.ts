import type { Handler } from './context.js'

export const sessionHandlers: Readonly<Record<string, Handler>> = {
  'session.login_with_password': ({ sessions }, [user, password, , originator]) =>
    sessions.login(String(user), String(password), typeof originator === 'string' && originator !== '' ? originator : 'unknown'),
  'session.logout': ({ sessions, session }) => {
    sessions.logout(session)
    return ''
  },
  'session.local_logout': ({ sessions, session }) => {
    sessions.logout(session)
    return ''
  },
}
