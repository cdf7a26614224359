import t from 'tap'
import { decodeClientMessage, encodeFramebufferUpdate } from '../../src/consoles/rfb/codec.js'
import { RfbProtocolError } from '../../src/consoles/rfb/errors.js'
import { decodePixelFormat, encodePixelFormat, encodePixels, DEFAULT_PIXEL_FORMAT } from '../../src/consoles/rfb/pixel-format.js'
import { RfbSession, DEFAULT_CODEC_LIMITS } from '../../src/consoles/rfb/session.js'
import { TextScreen } from '../../src/consoles/rfb/text-screen.js'
import { LabTerminal } from '../../src/consoles/lab-terminal.js'
import { RfbViewer } from '../helpers/rfb-client.js'

const subject = { kind: 'VM', name: 'web-1', hostname: 'web-1', kernel: '6.1.0-keel' } as const

/** A session and a viewer wired to each other in memory; `sent` counts the server's bytes. */
function pair(terminal = new LabTerminal(subject)): { session: RfbSession; viewer: RfbViewer; terminal: LabTerminal; sent: Buffer[] } {
  const sent: Buffer[] = []
  let session: RfbSession | undefined
  const viewer = new RfbViewer((bytes) => session?.receive(bytes))
  session = new RfbSession(terminal, (bytes) => {
    sent.push(bytes)
    viewer.receive(bytes)
  })
  session.start()
  return { session, viewer, terminal, sent }
}

t.test('codec: a message not all there waits; one that breaks the protocol throws', async (t) => {
  const key = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x61])
  t.equal(decodeClientMessage(key.subarray(0, 5), DEFAULT_CODEC_LIMITS), undefined)
  t.same(decodeClientMessage(key, DEFAULT_CODEC_LIMITS), { value: { type: 'key', down: true, keysym: 0x61 }, size: 8 })
  t.throws(() => decodeClientMessage(Buffer.from([99]), DEFAULT_CODEC_LIMITS), RfbProtocolError)
  // The bound is checked on the count, before any of the listed encodings arrive.
  const encodings = Buffer.from([2, 0, 0x01, 0x01])
  t.throws(() => decodeClientMessage(encodings, DEFAULT_CODEC_LIMITS), /257 encodings/)
  const cut = Buffer.alloc(8)
  cut.writeUInt8(6, 0)
  cut.writeUInt32BE(DEFAULT_CODEC_LIMITS.maxCutText + 1, 4)
  t.throws(() => decodeClientMessage(cut, DEFAULT_CODEC_LIMITS), /ClientCutText/)
  const setEncodings = Buffer.from([2, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x21])
  t.same(decodeClientMessage(setEncodings, DEFAULT_CODEC_LIMITS)?.value, { type: 'set-encodings', encodings: [0, -223] })
})

t.test('pixel formats: 32-bit true colour both ways round, 16-bit 565, a colour map refused', async (t) => {
  t.same(decodePixelFormat(encodePixelFormat(DEFAULT_PIXEL_FORMAT), 0), DEFAULT_PIXEL_FORMAT)
  const rgb = Uint8Array.from([0x11, 0x22, 0x33])
  t.same([...encodePixels(rgb, DEFAULT_PIXEL_FORMAT)], [0x33, 0x22, 0x11, 0x00])
  const novnc = { ...DEFAULT_PIXEL_FORMAT, redShift: 0, greenShift: 8, blueShift: 16 }
  t.same([...encodePixels(rgb, novnc)], [0x11, 0x22, 0x33, 0x00])
  const rgb565 = { ...DEFAULT_PIXEL_FORMAT, bitsPerPixel: 16 as const, depth: 16, bigEndian: true, redMax: 31, greenMax: 63, blueMax: 31, redShift: 11, greenShift: 5, blueShift: 0 }
  t.same([...encodePixels(Uint8Array.from([255, 255, 255]), rgb565)], [0xff, 0xff])
  const colourMap = encodePixelFormat({ ...DEFAULT_PIXEL_FORMAT, bitsPerPixel: 8, trueColour: false })
  t.throws(() => decodePixelFormat(colourMap, 0), /colour-map/)
  const overflowing = encodePixelFormat({ ...DEFAULT_PIXEL_FORMAT, bitsPerPixel: 16 })
  t.throws(() => decodePixelFormat(overflowing, 0), /does not fit/)
})

t.test('a framebuffer update is a header and Raw rectangles', async (t) => {
  const update = encodeFramebufferUpdate([{ x: 8, y: 16, width: 1, height: 1, pixels: Buffer.from([1, 2, 3, 4]) }])
  t.same([...update], [0, 0, 0, 1, 0, 8, 0, 16, 0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4])
})

t.test('the handshake: version, security None, the screen and its name', async (t) => {
  const { viewer } = pair()
  t.equal(viewer.width, 640)
  t.equal(viewer.height, 400)
  t.equal(viewer.name, 'web-1')
})

t.test('a key typed shows in the next incremental update, and only the changed cells are sent', async (t) => {
  const { viewer, terminal, sent } = pair()
  viewer.requestUpdate(false)
  t.equal(viewer.updates, 1)
  t.ok(viewer.cellLit(0, 0), 'the boot lines are drawn')
  const { row, column } = terminal.screen.cursor
  t.equal(terminal.screen.line(row), 'web-1 login:')
  t.notOk(viewer.cellLit(column, row) && viewer.cellLit(column + 1, row))
  viewer.requestUpdate(true)
  t.equal(viewer.updates, 1, 'an incremental request waits while nothing changed')
  const before = sent.length
  viewer.key(0x78)
  t.equal(viewer.updates, 2)
  t.ok(viewer.cellLit(column, row), 'the x is drawn where the cursor was')
  t.equal(terminal.screen.line(row), 'web-1 login: x')
  const update = sent.slice(before).reduce((total, bytes) => total + bytes.length, 0)
  t.equal(update, 4 + 12 + 2 * 8 * 16 * 4, 'one rectangle: the x and the cursor cell after it')
})

t.test('a session refuses a version or a security type it did not offer', async (t) => {
  const session = new RfbSession(new LabTerminal(subject), () => {})
  session.start()
  t.throws(() => session.receive(Buffer.from('RFB 003.003\n', 'latin1')), /unsupported protocol version RFB 003.003/)
  const other = new RfbSession(new LabTerminal(subject), () => {})
  other.start()
  other.receive(Buffer.from('RFB 003.008\n', 'latin1'))
  t.throws(() => other.receive(Buffer.from([2])), /security type 2/)
})

t.test('a message split across receives is handled once whole', async (t) => {
  const { viewer, session, terminal } = pair()
  viewer.requestUpdate(true)
  const key = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x79])
  session.receive(key.subarray(0, 3))
  t.equal(terminal.screen.line(terminal.screen.cursor.row), 'web-1 login:')
  session.receive(key.subarray(3))
  t.equal(terminal.screen.line(terminal.screen.cursor.row), 'web-1 login: y')
})

t.test('the login prompt: echo, backspace, a password not echoed, then a new prompt', async (t) => {
  const terminal = new LabTerminal(subject)
  const type = (text: string): void => {
    for (const char of text) terminal.key(char.charCodeAt(0), true)
  }
  const line = (): string => terminal.screen.line(terminal.screen.cursor.row)
  type('roox')
  terminal.key(0xff08, true)
  terminal.key(0x74, false)
  type('t')
  t.equal(line(), 'web-1 login: root')
  terminal.key(0xff0d, true)
  t.equal(line(), 'Password:')
  type('secret')
  t.equal(line(), 'Password:', 'a password is not echoed')
  terminal.key(0xff0d, true)
  t.equal(line(), 'web-1 login:')
  t.equal(terminal.screen.line(terminal.screen.cursor.row - 1), 'Login incorrect')
})

t.test('the screen scrolls at its last line', async (t) => {
  const screen = new TextScreen(10, 3)
  screen.write('one\ntwo\nthree\nfour')
  t.same([screen.line(0), screen.line(1), screen.line(2)], ['two', 'three', 'four'])
  screen.takeDirty()
  screen.write('\n')
  t.equal(screen.takeDirty().length, 3, 'a scroll redraws every row')
})
