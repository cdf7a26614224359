import { GLYPH_HEIGHT, GLYPH_WIDTH, glyphOf } from './font.js'

export interface Rectangle {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

/** Foreground colours a cell can have, as RGB. */
export const COLOURS = {
  text: [0xc0, 0xc0, 0xc0],
  ok: [0x3c, 0xd0, 0x5a],
  bright: [0xff, 0xff, 0xff],
} as const satisfies Record<string, readonly [number, number, number]>
export type Colour = keyof typeof COLOURS
const PALETTE: ReadonlyArray<readonly [number, number, number]> = Object.values(COLOURS)
const COLOUR_INDEX = new Map(Object.keys(COLOURS).map((name, index) => [name, index]))
const BACKGROUND = [0x10, 0x10, 0x18] as const
/** the cursor: an underline on the glyph's last rows but one */
const CURSOR_ROWS = [GLYPH_HEIGHT - 3, GLYPH_HEIGHT - 2]

/**
 * A text-mode screen of cells, drawn with the bitmap font. It remembers which
 * cells changed since the last `takeDirty`, so that a viewer is sent only
 * what it has not seen.
 */
export class TextScreen {
  readonly columns: number
  readonly rows: number
  readonly #chars: Uint8Array
  readonly #colours: Uint8Array
  /** per row, the first and last changed column, or -1 */
  readonly #dirtyFrom: Int16Array
  readonly #dirtyTo: Int16Array
  #row = 0
  #column = 0

  constructor(columns = 80, rows = 25) {
    this.columns = columns
    this.rows = rows
    this.#chars = new Uint8Array(columns * rows).fill(0x20)
    this.#colours = new Uint8Array(columns * rows)
    this.#dirtyFrom = new Int16Array(rows).fill(0)
    this.#dirtyTo = new Int16Array(rows).fill(columns - 1)
  }

  get width(): number {
    return this.columns * GLYPH_WIDTH
  }

  get height(): number {
    return this.rows * GLYPH_HEIGHT
  }

  get cursor(): { readonly row: number; readonly column: number } {
    return { row: this.#row, column: this.#column }
  }

  /** The text of a row, without trailing spaces. */
  line(row: number): string {
    const start = row * this.columns
    return Buffer.from(this.#chars.subarray(start, start + this.columns)).toString('latin1').trimEnd()
  }

  /** Writes text at the cursor: `\n` starts a new line, a line full wraps, the last line scrolls. */
  write(text: string, colour: Colour = 'text'): void {
    const index = COLOUR_INDEX.get(colour) ?? 0
    for (const char of text) {
      if (char === '\n') {
        this.#newLine()
        continue
      }
      if (this.#column >= this.columns) this.#newLine()
      const code = char.charCodeAt(0)
      this.#set(this.#row, this.#column, code < 0x7f ? code : 0x3f, index)
      this.#moveTo(this.#row, this.#column + 1)
    }
  }

  /** Erases the character before the cursor on its line; false at the line's start. */
  backspace(): boolean {
    if (this.#column === 0) return false
    this.#moveTo(this.#row, this.#column - 1)
    this.#set(this.#row, this.#column, 0x20, 0)
    return true
  }

  /** The rectangles, in pixels, changed since last asked: one per changed row. */
  takeDirty(): Rectangle[] {
    const rectangles: Rectangle[] = []
    for (let row = 0; row < this.rows; row++) {
      const from = this.#dirtyFrom[row] ?? -1
      if (from < 0) continue
      const to = this.#dirtyTo[row] ?? from
      rectangles.push({ x: from * GLYPH_WIDTH, y: row * GLYPH_HEIGHT, width: (to - from + 1) * GLYPH_WIDTH, height: GLYPH_HEIGHT })
      this.#dirtyFrom[row] = -1
    }
    return rectangles
  }

  get dirty(): boolean {
    return this.#dirtyFrom.some((from) => from >= 0)
  }

  /** The pixels of a rectangle (clipped to the screen) as RGB triples, row by row. */
  render(area: Rectangle): { readonly area: Rectangle; readonly rgb: Uint8Array } {
    const x = Math.min(area.x, this.width)
    const y = Math.min(area.y, this.height)
    const clipped = { x, y, width: Math.min(area.width, this.width - x), height: Math.min(area.height, this.height - y) }
    const rgb = new Uint8Array(clipped.width * clipped.height * 3)
    for (let py = 0; py < clipped.height; py++) {
      const screenY = y + py
      const row = Math.floor(screenY / GLYPH_HEIGHT)
      const glyphRow = screenY % GLYPH_HEIGHT
      const underline = row === this.#row && CURSOR_ROWS.includes(glyphRow)
      for (let px = 0; px < clipped.width; px++) {
        const screenX = x + px
        const column = Math.floor(screenX / GLYPH_WIDTH)
        const cell = row * this.columns + column
        const bits = glyphOf(this.#chars[cell] ?? 0x20)[glyphRow] ?? 0
        const lit = (bits & (0x80 >> screenX % GLYPH_WIDTH)) !== 0 || (underline && column === this.#column)
        const colour = lit ? (PALETTE[this.#colours[cell] ?? 0] ?? COLOURS.text) : BACKGROUND
        rgb.set(colour, (py * clipped.width + px) * 3)
      }
    }
    return { area: clipped, rgb }
  }

  #set(row: number, column: number, code: number, colour: number): void {
    const cell = row * this.columns + column
    if (this.#chars[cell] === code && this.#colours[cell] === colour) return
    this.#chars[cell] = code
    this.#colours[cell] = colour
    this.#touch(row, column)
  }

  #moveTo(row: number, column: number): void {
    // The cursor is drawn in its cell: both the cell it leaves and the one it enters change.
    this.#touch(this.#row, Math.min(this.#column, this.columns - 1))
    this.#row = row
    this.#column = column
    this.#touch(row, Math.min(column, this.columns - 1))
  }

  #newLine(): void {
    if (this.#row + 1 < this.rows) {
      this.#moveTo(this.#row + 1, 0)
      return
    }
    this.#chars.copyWithin(0, this.columns)
    this.#colours.copyWithin(0, this.columns)
    this.#chars.fill(0x20, (this.rows - 1) * this.columns)
    this.#colours.fill(0, (this.rows - 1) * this.columns)
    this.#dirtyFrom.fill(0)
    this.#dirtyTo.fill(this.columns - 1)
    this.#column = 0
  }

  #touch(row: number, column: number): void {
    const from = this.#dirtyFrom[row] ?? -1
    if (from < 0 || column < from) this.#dirtyFrom[row] = column
    if (from < 0 || column > (this.#dirtyTo[row] ?? column)) this.#dirtyTo[row] = column
  }
}
