// Part of `npm run build`: tsc does not copy JavaScript, so the generated configuration validator
// (scripts/generate-config-validator.ts) is copied into dist beside the compiled config.js.
import { copyFileSync } from 'node:fs'

copyFileSync(new URL('../lib/cli/config-validator.generated.js', import.meta.url), new URL('../dist/lib/cli/config-validator.generated.js', import.meta.url))
