import { basename } from 'node:path'

/**
 * The Debian packages of the outside tools the tests hold Keel's output against, as .ci/run
 * installs them. A missing tool fails its test with this name rather than with an empty output
 * compared to a disk: CI cannot go green without the check.
 */
const PACKAGES: Readonly<Record<string, string>> = {
  'qemu-img': 'qemu-utils',
  vhdiinfo: 'libvhdi-utils',
  xxhsum: 'xxhash',
  zstd: 'zstd',
  gzip: 'gzip',
  tar: 'tar',
  dd: 'coreutils',
  sh: 'dash',
  python3: 'python3',
}

const PYTHON_MODULES: Readonly<Record<string, string>> = {
  pyvhdi: 'python3-libvhdi',
  xxhash: 'python3-xxhash',
}

export class MissingTool extends Error {
  constructor(what: string, pkg: string | undefined) {
    const install = pkg === undefined ? 'install it' : `install the Debian package ${pkg} (apt-get install ${pkg}, as .ci/run does)`
    super(`${what} is missing: this test needs it; ${install}`)
    this.name = 'MissingTool'
  }
}

/**
 * Why a command failed when the reason is a missing tool: it could not be started, a shell line
 * could not find one of its commands (status 127), or a python3 script stopped on an import.
 */
export function missingTool(command: string, result: { error?: Error & { code?: string }; status: number | null; stderr: string }): MissingTool | undefined {
  const name = basename(command)
  if (result.error?.code === 'ENOENT') return new MissingTool(`the command ${name}`, PACKAGES[name])
  const inShell = result.status === 127 ? /(?:^|\s)([\w.-]+): (?:command )?not found/.exec(result.stderr)?.[1] : undefined
  if (inShell !== undefined) return new MissingTool(`the command ${inShell}`, PACKAGES[inShell])
  const module = name.startsWith('python') ? /ModuleNotFoundError: No module named '([\w]+)/.exec(result.stderr)?.[1] : undefined
  if (module !== undefined) return new MissingTool(`the python3 module ${module}`, PYTHON_MODULES[module])
  return undefined
}
