// Which of the comparison's programs are installed, and how to install the missing ones.
// BENCH_SQUID_ROOT=<dir>: look for Squid and its helpers under <dir> first (<dir>/usr/sbin/squid,
// <dir>/usr/lib/squid/...): Debian's `squid` package is the GnuTLS build, without ssl_bump or
// security_file_certgen; `apt-get download squid-openssl && dpkg-deb -x squid-openssl_*.deb <dir>`
// unpacks the OpenSSL build beside it without replacing it (it uses the installed squid-common).
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const squidRoot = process.env.BENCH_SQUID_ROOT ?? ''
const underRoot = (path) => (squidRoot === '' ? [] : [join(squidRoot, path)])

const CANDIDATES = {
  nginx: ['/usr/sbin/nginx', 'nginx'],
  hey: ['hey'],
  curl: ['curl'],
  chromium: ['chromium'],
  squid: [...underRoot('/usr/sbin/squid'), '/usr/sbin/squid', 'squid'],
  certgen: [...underRoot('/usr/lib/squid/security_file_certgen'), '/usr/lib/squid/security_file_certgen'],
  ncsaAuth: [...underRoot('/usr/lib/squid/basic_ncsa_auth'), '/usr/lib/squid/basic_ncsa_auth'],
  mitmdump: ['mitmdump']
}
const PACKAGES = { nginx: 'nginx', hey: 'hey', curl: 'curl', chromium: 'chromium', squid: 'squid-openssl', certgen: 'squid-openssl', ncsaAuth: 'squid-openssl', mitmdump: 'mitmproxy' }

/** The first of `names` installed: an absolute path that exists, or a program on the PATH; undefined when none is. */
export function locate (names) {
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

/**
 * Paths of the installed programs (undefined when missing), the apt-get line for the missing
 * ones, and a note when the Squid found cannot bump TLS (the GnuTLS build).
 */
export function detectTools () {
  const found = Object.fromEntries(Object.entries(CANDIDATES).map(([tool, names]) => [tool, locate(names)]))
  let note = ''
  if (found.squid !== undefined && !spawnSync(found.squid, ['-v'], { encoding: 'utf8' }).stdout?.includes('--with-openssl')) {
    note = `${found.squid} is Squid's GnuTLS build (Debian's "squid"), which has no ssl_bump: install squid-openssl, or unpack it without installing (apt-get download squid-openssl && dpkg-deb -x squid-openssl_*.deb DIR) and set BENCH_SQUID_ROOT=DIR`
    found.squid = undefined
    found.certgen = undefined
  }
  const missing = [...new Set(Object.keys(CANDIDATES).filter((tool) => found[tool] === undefined).map((tool) => PACKAGES[tool]))]
  return { found, missing, note, installHint: missing.length === 0 ? '' : `apt-get install ${missing.join(' ')}` }
}

/** First non-empty line of `path args` (stdout or stderr: nginx prints its version on stderr), for the report. */
export function versionOf (path, args) {
  const result = spawnSync(path, args, { encoding: 'utf8' })
  return `${result.stdout ?? ''}\n${result.stderr ?? ''}`.split('\n').map((l) => l.trim()).find(Boolean) ?? 'unknown'
}
