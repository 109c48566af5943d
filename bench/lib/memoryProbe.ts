/**
 * Preloaded into the processes the bench measures (`bun --preload`): every 100 ms it reads where the process's memory
 * is, and whenever the resident set is the highest so far it writes that reading to MEMORY_PROBE_FILE. The bench
 * then says what the peak was made of: the JavaScript heap (JavaScriptCore's own, `heapTotal`) and everything outside
 * it (request and response bodies, the database client's buffers, large strings' contents, code and the JIT's,
 * thread stacks, the binary's pages). mimalloc's committed figure (bun:jsc memoryUsage) is not used: it counts
 * address space that is not resident, several times the RSS under load.
 * Only cheap readings: no heap walk (bun:jsc's heapStats counts every object and would disturb the figures).
 */
import { writeFileSync } from "node:fs"
import { memoryUsage as processMemory } from "node:process"

const file = process.env.MEMORY_PROBE_FILE
if (file !== undefined && file !== "") {
  let peak = 0
  setInterval(() => {
    const p = processMemory()
    if (p.rss <= peak) return
    peak = p.rss
    const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10
    const reading = {
      rssMiB: mib(p.rss),
      heapTotalMiB: mib(p.heapTotal),
      heapUsedMiB: mib(p.heapUsed),
      outsideHeapMiB: mib(p.rss - p.heapTotal),
    }
    try {
      writeFileSync(file, JSON.stringify(reading))
    } catch {}
  }, 100).unref()
}
