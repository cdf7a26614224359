import t from 'tap'
import { PassThrough } from 'node:stream'
import { Progress } from '../../src/cli/progress.js'

function terminal(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY }) as unknown as NodeJS.WriteStream
  let text = ''
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()))
  return { stream, text: () => text }
}

t.test('on a terminal: done / total, percent, rate and ETA, throttled', async (t) => {
  const { stream, text } = terminal(true)
  const progress = new Progress(4 * 1024 * 1024, stream)
  for (let i = 0; i < 1000; i++) progress.add(1024)
  progress.finish()
  const lines = text().split('\r').filter((line) => line !== '')
  t.ok(lines.length <= 3, `a burst of chunks draws at most a few times (${lines.length})`)
  t.match(text(), /1000\.0 KiB \/ 4\.0 MiB {2}24% {2}[\d.]+ [KMG]i?B\/s {2}ETA \d+:\d\d\n$/)
})

t.test('without a total: bytes and rate only', async (t) => {
  const { stream, text } = terminal(true)
  const progress = new Progress(undefined, stream)
  progress.add(3 * 1024 * 1024)
  progress.finish()
  t.match(text(), /3\.0 MiB {2}[\d.]+ [KMG]i?B\/s\n$/)
  t.notMatch(text(), 'ETA')
})

t.test('silent when not a terminal', async (t) => {
  const { stream, text } = terminal(false)
  const progress = new Progress(100, stream)
  progress.add(50)
  progress.finish()
  t.equal(text(), '')
})
