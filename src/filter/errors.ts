import { KeelError } from '../errors.js'

/** The only error parseFilter throws, whatever the input. */
export class FilterSyntaxError extends KeelError {
  readonly position: number

  constructor(source: string, position: number, expected: string, options?: { cause?: unknown }) {
    super(
      'FILTER_PARSE_ERROR',
      `parse error: expected ${expected} at position ${position}`,
      { stringToParse: source, position },
      options,
    )
    this.name = 'FilterSyntaxError'
    this.position = position
  }
}
