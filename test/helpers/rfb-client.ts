/**
 * A minimal RFB 3.8 viewer for tests and the benchmark: it speaks the
 * client's side over any byte transport, keeps the framebuffer it is sent
 * (32-bit pixels, as noVNC asks: red, green, blue from the low byte), and
 * tells when an update has been applied.
 */
export class RfbViewer {
  width = 0
  height = 0
  name = ''
  /** RGBA bytes, 4 a pixel */
  framebuffer = new Uint8Array(0)
  readonly #send: (bytes: Buffer) => void
  #pending = Buffer.alloc(0)
  #phase: 'version' | 'security' | 'result' | 'init' | 'normal' = 'version'
  #waiters: Array<{ predicate: () => boolean; resolve: () => void }> = []
  updates = 0
  #receiving = false

  constructor(send: (bytes: Buffer) => void) {
    this.#send = send
  }

  receive(bytes: Buffer): void {
    this.#pending = Buffer.concat([this.#pending, bytes])
    // A server in memory answers inside this call: its bytes wait for the loop below.
    if (this.#receiving) return
    this.#receiving = true
    try {
      for (;;) {
        const size = this.#step(this.#pending)
        if (size === 0) break
        this.#pending = this.#pending.subarray(size)
      }
    } finally {
      this.#receiving = false
    }
    this.#waiters = this.#waiters.filter((waiter) => {
      if (!waiter.predicate()) return true
      waiter.resolve()
      return false
    })
  }

  /** Resolves once `predicate` holds after some server message. */
  until(predicate: () => boolean): Promise<void> {
    if (predicate()) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push({ predicate, resolve }))
  }

  requestUpdate(incremental: boolean): void {
    const message = Buffer.alloc(10)
    message.writeUInt8(3, 0)
    message.writeUInt8(incremental ? 1 : 0, 1)
    message.writeUInt16BE(this.width, 6)
    message.writeUInt16BE(this.height, 8)
    this.#send(message)
  }

  key(keysym: number): void {
    for (const down of [1, 0]) {
      const message = Buffer.alloc(8)
      message.writeUInt8(4, 0)
      message.writeUInt8(down, 1)
      message.writeUInt32BE(keysym, 4)
      this.#send(message)
    }
  }

  /** Whether the cell's character (8×16 glyphs) has a pixel lit, the cursor's underline (its rows 13 and 14) apart. */
  cellLit(column: number, row: number): boolean {
    for (let y = row * 16; y < row * 16 + 13; y++) {
      for (let x = column * 8; x < column * 8 + 8; x++) if ((this.framebuffer[(y * this.width + x) * 4] ?? 0) > 0x80) return true
    }
    return false
  }

  #step(bytes: Buffer): number {
    switch (this.#phase) {
      case 'version':
        if (bytes.length < 12) return 0
        this.#send(Buffer.from('RFB 003.008\n', 'latin1'))
        this.#phase = 'security'
        return 12
      case 'security': {
        const count = bytes[0]
        if (count === undefined || bytes.length < 1 + count) return 0
        this.#send(Buffer.from([1]))
        this.#phase = 'result'
        return 1 + count
      }
      case 'result':
        if (bytes.length < 4) return 0
        if (bytes.readUInt32BE(0) !== 0) throw new Error('security failed')
        this.#send(Buffer.from([1]))
        this.#phase = 'init'
        return 4
      case 'init': {
        if (bytes.length < 24) return 0
        const nameLength = bytes.readUInt32BE(20)
        if (bytes.length < 24 + nameLength) return 0
        this.width = bytes.readUInt16BE(0)
        this.height = bytes.readUInt16BE(2)
        this.name = bytes.toString('utf8', 24, 24 + nameLength)
        this.framebuffer = new Uint8Array(this.width * this.height * 4)
        // noVNC's pixel format: 32 bits, little-endian, red in the low byte.
        const format = Buffer.from([0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0])
        this.#send(format)
        this.#phase = 'normal'
        return 24 + nameLength
      }
      case 'normal':
        return this.#message(bytes)
    }
  }

  #message(bytes: Buffer): number {
    const type = bytes[0]
    if (type === undefined) return 0
    if (type === 2) return 1
    if (type !== 0) throw new Error(`unexpected server message ${type}`)
    if (bytes.length < 4) return 0
    const count = bytes.readUInt16BE(2)
    let offset = 4
    const rectangles: Array<{ x: number; y: number; width: number; height: number; at: number }> = []
    for (let index = 0; index < count; index++) {
      if (bytes.length < offset + 12) return 0
      const rectangle = { x: bytes.readUInt16BE(offset), y: bytes.readUInt16BE(offset + 2), width: bytes.readUInt16BE(offset + 4), height: bytes.readUInt16BE(offset + 6), at: offset + 12 }
      if (bytes.readInt32BE(offset + 8) !== 0) throw new Error('not a Raw rectangle')
      offset += 12 + rectangle.width * rectangle.height * 4
      if (bytes.length < offset) return 0
      rectangles.push(rectangle)
    }
    for (const { x, y, width, height, at } of rectangles) {
      for (let row = 0; row < height; row++) {
        const start = at + row * width * 4
        this.framebuffer.set(bytes.subarray(start, start + width * 4), ((y + row) * this.width + x) * 4)
      }
    }
    this.updates++
    return offset
  }
}
