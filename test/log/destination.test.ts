import t from 'tap'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { LogDestination } from '../../src/log-destination.js'

t.test('every line is written once, in order, across pieces, overlong lines and a final flushSync', async (t) => {
  const file = join(t.testdir(), 'log')
  const fd = openSync(file, 'w')
  const destination = new LogDestination(fd)
  const expected: string[] = []
  const line = (text: string): void => {
    expected.push(text)
    destination.write(text)
  }
  for (let i = 0; i < 5000; i++) line(`{"n":${i},"text":"${'é✓'.repeat(i % 97)}"}\n`)
  line(`{"overlong":"${'x'.repeat(200_000)}"}\n`)
  for (let i = 0; i < 100; i++) line(`{"after":${i}}\n`)
  await sleep(150)
  line('{"last":"before the stop"}\n')
  destination.flushSync()
  // flushSync leaves an asynchronous write under way alone: let it end before reading.
  await sleep(50)
  closeSync(fd)
  t.equal(readFileSync(file, 'utf8'), expected.join(''))
})

t.test('a quiet log is written within 100 ms of its first line', async (t) => {
  const file = join(t.testdir(), 'log')
  const fd = openSync(file, 'w')
  t.teardown(() => closeSync(fd))
  const destination = new LogDestination(fd)
  destination.write('{"one":1}\n')
  t.equal(readFileSync(file, 'utf8'), '', 'not yet')
  await sleep(250)
  t.equal(readFileSync(file, 'utf8'), '{"one":1}\n')
})
