import { expectTransfer, upload } from './keel-client.js'

/** JSON-RPC calls to a XAPI simulator (`keel lab xapi`), as a client of the benchmark's own, not Keel's session. */
export class SimulatorClient {
  #id = 0
  session = ''

  constructor(readonly url: string) {}

  async call<T>(method: string, params: readonly unknown[]): Promise<T> {
    const response = await fetch(`${this.url}/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', method, params: method.startsWith('session.login') ? params : [this.session, ...params], id: ++this.#id }),
    })
    const answer = (await response.json()) as { result?: T; error?: unknown }
    if (answer.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`)
    return answer.result as T
  }

  async login(password: string): Promise<void> {
    this.session = await this.call<string>('session.login_with_password', ['root', password, '1.0', 'keel-bench'])
  }

  /** A new VDI of `size` bytes on the pool's default SR, with the raw file's content. */
  async importVdi(rawFile: string, size: number): Promise<{ ref: string; uuid: string }> {
    const [poolRef] = await this.call<string[]>('pool.get_all', [])
    const srRef = await this.call<string>('pool.get_default_SR', [poolRef])
    const ref = await this.call<string>('VDI.create', [{ name_label: 'bench export', SR: srRef, virtual_size: String(size), type: 'user', sharable: false, read_only: false, other_config: {} }])
    const uuid = await this.call<string>('VDI.get_uuid', [ref])
    expectTransfer('import', await upload(`${this.url}/import_raw_vdi?session_id=${this.session}&vdi=${ref}&format=raw`, {}, rawFile, size), 200)
    return { ref, uuid }
  }

  /** The simulator's own export of a VDI, in `format`. */
  exportUrl(ref: string, format: 'raw' | 'vhd'): string {
    return `${this.url}/export_raw_vdi?session_id=${this.session}&vdi=${ref}&format=${format}`
  }
}
