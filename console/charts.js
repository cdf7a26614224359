// Statistics charts: uPlot (22 KB gzipped) is loaded the first time a chart is drawn.
import { useEffect, useRef } from 'preact/hooks'
import { api } from './api.js'
import { html, useAsync } from './ui.js'

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 })

let uPlotLoaded
function loadUPlot() {
  uPlotLoaded ??= new Promise((resolve, reject) => {
    const style = document.createElement('link')
    style.rel = 'stylesheet'
    style.href = new URL('./uplot.css', import.meta.url).href
    document.head.append(style)
    const script = document.createElement('script')
    script.src = new URL('./uplot.js', import.meta.url).href
    script.onload = () => resolve(window.uPlot)
    script.onerror = reject
    document.head.append(script)
  })
  return uPlotLoaded
}

/** The numeric series of a stats answer, grouped by what they measure (cpus, memory, xvds, vifs, load). */
function groups(stats) {
  const found = {}
  const walk = (value, path) => {
    if (Array.isArray(value)) {
      if (value.every((point) => typeof point === 'number' || point === null)) (found[path[0]] ??= []).push([path.join(' '), value])
      return
    }
    if (typeof value === 'object' && value !== null) for (const [key, child] of Object.entries(value)) walk(child, [...path, key])
  }
  walk(stats ?? {}, [])
  return found
}

function Chart({ title, series, end, interval }) {
  const box = useRef()
  useEffect(() => {
    let plot
    let live = true
    loadUPlot().then((uPlot) => {
      if (!live) return
      const length = Math.max(...series.map(([, values]) => values.length))
      const times = Array.from({ length }, (_, index) => end - (length - 1 - index) * interval)
      plot = new uPlot(
        {
          title,
          width: 420,
          height: 180,
          axes: [{}, { size: 56, values: (_, ticks) => ticks.map((tick) => compact.format(tick)) }],
          series: [{}, ...series.map(([label], index) => ({ label, stroke: `hsl(${(index * 67) % 360} 60% 45%)` }))],
        },
        [times, ...series.map(([, values]) => values)],
        box.current,
      )
    })
    return () => {
      live = false
      plot?.destroy()
    }
  }, [series, end])
  return html`<div class="chart" ref=${box}></div>`
}

export function StatsCharts({ collection, id }) {
  const stats = useAsync(() => api(`${collection}/${encodeURIComponent(id)}/stats?granularity=seconds`), [collection, id])
  if (stats.loading) return html`<p class="loading">Loading statistics…</p>`
  if (stats.error !== undefined) return html`<p class="empty chart-empty">No statistics for this object (${stats.error.code}).</p>`
  const found = groups(stats.value.stats)
  const names = Object.keys(found)
  if (names.length === 0) return html`<p class="empty chart-empty">No statistics yet.</p>`
  return html`<div class="charts">${names.map(
    (name) => html`<${Chart} title=${name} series=${found[name]} end=${stats.value.endTimestamp} interval=${stats.value.interval ?? 5} />`,
  )}</div>`
}
