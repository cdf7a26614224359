import { createInterface } from 'node:readline'
import { Writable } from 'node:stream'

/** Reads a line from the terminal without echoing it. */
export function promptHidden(question: string): Promise<string> {
  let muted = false
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!muted) process.stderr.write(chunk)
      callback()
    },
  })
  const rl = createInterface({ input: process.stdin, output, terminal: process.stdin.isTTY === true })
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      rl.close()
      process.stderr.write('\n')
      resolve(answer)
    })
    muted = true
  })
}
