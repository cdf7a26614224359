import t from 'tap'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { LogDestination } from '../../src/log-destination.js'

/** A stream that holds each write's callback until released, as a pipe nobody reads holds writes. */
class HeldSink extends Writable {
  /** bytes as they were when each write ended: a piece reused too early would show here */
  readonly #written: Buffer[] = []
  readonly #held: (() => void)[] = []
  #holding = true
  #onWrite: (() => void) | undefined

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const end = (): void => {
      this.#written.push(Buffer.from(chunk))
      callback()
      this.#onWrite?.()
    }
    if (this.#holding) this.#held.push(end)
    else end()
  }

  release(): void {
    this.#holding = false
    for (const end of this.#held.splice(0)) end()
  }

  /** Resolves at the next write that ends. */
  nextWrite(): Promise<void> {
    return new Promise((resolve) => (this.#onWrite = resolve))
  }

  get writes(): number {
    return this.#written.length
  }

  get text(): string {
    return Buffer.concat(this.#written).toString('utf8')
  }
}

const dropped = (count: number): string => `{"dropped":${count}}\n`
const destinationOf = (sink: Writable, maxBuffered = 16 * 1024 * 1024): LogDestination => new LogDestination(sink, { maxBuffered, droppedLine: dropped })

t.test('every line is written once, in order, across pieces, overlong lines, and flushes asked for with a write in flight', async (t) => {
  const sink = new HeldSink()
  const destination = destinationOf(sink)
  const expected: string[] = []
  let refused = 0
  const line = (text: string): void => {
    expected.push(text)
    if (!destination.write(text)) refused++
  }
  for (let i = 0; i < 5000; i++) line(`{"n":${i},"text":"${'é✓'.repeat(i % 97)}"}\n`)
  line(`{"overlong":"${'x'.repeat(200_000)}"}\n`)
  for (let i = 0; i < 100; i++) line(`{"after":${i}}\n`)
  let released = false
  const first = destination.flush().then(() => released)
  line('{"logged":"while the first flush waits"}\n')
  const second = destination.flush().then(() => released)
  line('{"last":"before the stop"}\n')
  released = true
  sink.release()
  t.equal(await first, true, 'the first flush resolved once its writes ended')
  t.equal(await second, true)
  await destination.flush()
  t.equal(sink.text, expected.join(''))
  t.equal(refused, 0)
  t.equal(destination.dropped, 0)
})

t.test('a quiet log is written without a flush', async (t) => {
  const sink = new HeldSink()
  sink.release()
  const destination = destinationOf(sink)
  // The destination's timer does not hold the process open, by design: this does, until the write.
  const open = setInterval(() => {}, 60_000)
  t.teardown(() => clearInterval(open))
  const written = sink.nextWrite()
  destination.write('{"one":1}\n')
  t.equal(sink.text, '', 'not at once')
  await written
  t.equal(sink.text, '{"one":1}\n')
})

t.test('while a write is under way, lines logged over several 100 ms periods gather into one piece', async (t) => {
  const sink = new HeldSink()
  const destination = destinationOf(sink)
  destination.write('{"held":1}\n')
  const held = destination.flush()
  for (let n = 0; n < 3; n++) {
    destination.write(`{"n":${n}}\n`)
    await sleep(150)
  }
  sink.release()
  await held
  await destination.flush()
  t.equal(sink.text, '{"held":1}\n{"n":0}\n{"n":1}\n{"n":2}\n')
  t.equal(sink.writes, 2, 'the held write, then one piece: a stalled reader does not cost a piece each period')
})

t.test('past its bound, lines are dropped and counted, and a line saying so comes where they were', async (t) => {
  const sink = new HeldSink()
  const destination = destinationOf(sink, 4096)
  const line = (n: number): string => `{"n":${String(n).padStart(4, '0')},"pad":"${'x'.repeat(80)}"}\n`
  t.equal(line(0).length, 100)
  const accepted = Array.from({ length: 100 }, (_, n) => destination.write(line(n)))
  t.same(accepted, Array.from({ length: 100 }, (_, n) => n < 40), 'the first 40 lines fit in 4,096 bytes')
  t.equal(destination.dropped, 60)
  const flushed = destination.flush()
  t.equal(destination.write(line(100)), false, 'lines handed to a write under way still count against the bound')
  sink.release()
  await flushed
  t.equal(destination.write(line(101)), true)
  t.equal(destination.write(line(102)), true)
  await destination.flush()
  const kept = Array.from({ length: 40 }, (_, n) => line(n))
  t.equal(sink.text, [...kept, dropped(60), dropped(1), line(101), line(102)].join(''))
  t.equal(destination.dropped, 61)
})

t.test('lines of a write that fails are counted as dropped, and the stream’s error ends nothing', async (t) => {
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback(new Error('EPIPE: the reader is gone')) })
  const destination = destinationOf(sink)
  for (const n of [1, 2, 3]) destination.write(`{"n":${n}}\n`)
  await destination.flush()
  t.equal(destination.dropped, 3)
  t.equal(sink.destroyed, true)
  for (const n of [4, 5]) destination.write(`{"n":${n}}\n`)
  await destination.flush()
  t.equal(destination.dropped, 6, 'the two lines and the line saying that three were lost, which was lost with them')
})
