/**
 * A client broke the protocol (an unknown message, a bad pixel format, a
 * message over its bound). It never reaches HTTP: the session ends and the
 * WebSocket closes with the message as its reason.
 */
export class RfbProtocolError extends Error {
  override name = 'RfbProtocolError'
}
