// Which of the comparison's programs are installed, and how to install the missing ones.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const CANDIDATES = {
  nginx: ['/usr/sbin/nginx', 'nginx'],
  hey: ['hey'],
  squid: ['/usr/sbin/squid', 'squid'],
  certgen: ['/usr/lib/squid/security_file_certgen'],
  mitmdump: ['mitmdump']
}
const PACKAGES = { nginx: 'nginx', hey: 'hey', squid: 'squid-openssl', certgen: 'squid-openssl', mitmdump: 'mitmproxy' }

function locate (names) {
  for (const name of names) {
    if (name.startsWith('/')) {
      if (existsSync(name)) return name
      continue
    }
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined
    } catch {}
  }
  return undefined
}

/** Paths of the installed programs (undefined when missing) and the apt-get line for the missing ones. */
export function detectTools () {
  const found = Object.fromEntries(Object.entries(CANDIDATES).map(([tool, names]) => [tool, locate(names)]))
  const missing = [...new Set(Object.keys(CANDIDATES).filter((tool) => found[tool] === undefined).map((tool) => PACKAGES[tool]))]
  return { found, missing, installHint: missing.length === 0 ? '' : `apt-get install ${missing.join(' ')}` }
}

/** First non-empty line of `path args` (stdout or stderr: nginx prints its version on stderr), for the report. */
export function versionOf (path, args) {
  const result = spawnSync(path, args, { encoding: 'utf8' })
  return `${result.stdout ?? ''}\n${result.stderr ?? ''}`.split('\n').map((l) => l.trim()).find(Boolean) ?? 'unknown'
}
