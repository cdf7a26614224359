import { KeelError } from '../errors.js'

/** The only error parseFilter throws, whatever the input. */
export class FilterSyntaxError extends KeelError {
  readonly position: number

  constructor(source: string, position: number, expected: string, options?: { cause?: unknown; data?: Record<string, unknown> }) {
    const reason = options?.data?.['reason']
    super(
      'FILTER_PARSE_ERROR',
      `parse error: expected ${expected} at position ${position}${typeof reason === 'string' ? ` (${reason})` : ''}`,
      { stringToParse: source, position, ...options?.data },
      options?.cause === undefined ? undefined : { cause: options.cause },
    )
    this.name = 'FilterSyntaxError'
    this.position = position
  }
}
