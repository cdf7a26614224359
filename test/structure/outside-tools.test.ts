import t from 'tap'
import { run } from '../helpers/disks.js'

t.test('a missing outside tool fails its test with the tool and the Debian package to install', async (t) => {
  t.throws(() => run('keel-no-such-tool', []), { name: 'MissingTool', message: 'the command keel-no-such-tool is missing: this test needs it; install it' })
  t.throws(() => run('/nowhere/qemu-img', ['info']), { name: 'MissingTool', message: 'the command qemu-img is missing: this test needs it; install the Debian package qemu-utils (apt-get install qemu-utils, as .ci/run does)' })
  t.throws(() => run('sh', ['-c', 'true | vhdiinfo-not-here x']), /^the command vhdiinfo-not-here is missing/, 'a command missing inside a shell line')
  t.throws(() => run('python3', ['-c', 'import pyvhdi_not_here']), /^the python3 module pyvhdi_not_here is missing/)
  t.equal(run('sh', ['-c', 'exit 3']).status, 3, 'a tool that runs and fails is left to the test')
})
