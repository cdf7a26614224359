// A disk's downloads and upload, for those who may export or import its content.
import { api } from './api.js'
import { html, ActionButton, useMay } from './ui.js'

/** Asks for a file, then sends it as the disk's new content (raw, or VHD by its name). */
function pickAndUpload(vdi) {
  return new Promise((resolve, reject) => {
    const input = document.createElement('input')
    input.type = 'file'
    input.onchange = () => {
      const file = input.files[0]
      if (file === undefined) return resolve()
      const format = file.name.endsWith('.vhd') ? 'vhd' : 'raw'
      api(`vdis/${vdi.id}.${format}`, { method: 'PUT', body: file, headers: { 'content-type': 'application/octet-stream' } }).then(resolve, reject)
    }
    input.click()
  })
}

export function DiskDownloads({ vdi }) {
  const allowed = useMay('vdi', 'export-content', vdi.id)
  if (allowed !== true) return null
  return html`<a class="download-raw" data-id=${vdi.id} href=${`/rest/v0/vdis/${vdi.id}.raw`} download=${vdi.name_label + '.raw'}>raw</a> <a href=${`/rest/v0/vdis/${vdi.id}.vhd`} download=${vdi.name_label + '.vhd'}>VHD</a>`
}

export function DiskUpload({ vdi }) {
  return html`<${ActionButton} className="upload" privilege=${['vdi', 'import-content', vdi.id]} run=${() => pickAndUpload(vdi)}>Upload…<//>`
}
