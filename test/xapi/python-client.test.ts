import t from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

// Debian's python3-os-xenapi installs for the system interpreter, not a pyenv one first on PATH.
const PYTHON = '/usr/bin/python3'

function clientMissing(): string | false {
  try {
    execFileSync(PYTHON, ['-c', 'from os_xenapi.client import XenAPI'], { stdio: 'ignore' })
    return false
  } catch {
    return 'python3-os-xenapi is not installed (apt-get install python3-os-xenapi; .ci/run installs it)'
  }
}

/** Logs in over XML-RPC, lists the VMs, starts the first halted one and fails on a made-up ref, printing what it saw as JSON. */
const SCRIPT = `
import json, os, sys
from os_xenapi.client import XenAPI
session = XenAPI.Session(os.environ['XAPI_URL'])
session.xenapi.login_with_password('root', os.environ['XAPI_PASSWORD'], '1.0', 'python-test')
records = session.xenapi.VM.get_all_records()
vms = [ref for ref, vm in records.items() if not vm['is_a_template'] and not vm['is_control_domain']]
halted = [ref for ref in vms if records[ref]['power_state'] == 'Halted']
session.xenapi.VM.start(halted[0], False, False)
try:
    session.xenapi.VM.get_record('OpaqueRef:nope')
    failure = None
except XenAPI.Failure as error:
    failure = error.details
print(json.dumps({'vms': len(records), 'started': halted[0], 'power_state': session.xenapi.VM.get_power_state(halted[0]), 'failure': failure, 'api': session.API_version}))
session.xenapi.session.logout()
`

t.test("Debian's Python XenAPI client logs in over XML-RPC, lists VMs and starts one", { skip: clientMissing() }, async (t) => {
  const xapi = await startSimulator(t)
  const { stdout } = await promisify(execFile)(PYTHON, ['-c', SCRIPT], { env: { ...process.env, XAPI_URL: `${xapi.url}/`, XAPI_PASSWORD: PASSWORD } })
  const seen = JSON.parse(stdout) as { vms: number; started: string; power_state: string; failure: string[]; api: string }
  const session = await xapi.login()
  t.equal(seen.vms, (await xapi.call<string[]>('VM.get_all', [session])).length, 'it listed every VM')
  t.equal(seen.power_state, 'Running')
  t.equal(await xapi.call('VM.get_power_state', [session, seen.started]), 'Running', 'the VM it started runs')
  t.same(seen.failure, ['HANDLE_INVALID', 'VM', 'OpaqueRef:nope'], 'failures reach it as XenAPI.Failure details')
  t.equal(seen.api, '2.21', 'it read the API version from the master')
  t.equal([...xapi.simulator.services.db.ofClass('session')].filter((s) => s.record['originator'] === 'python-test').length, 0, 'it logged out')
})
