import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { configValidatorSource, GENERATED_VALIDATOR_PATH } from '../scripts/generate-config-validator'

test('bin: the configuration validator it ships is the one its schema compiles to (run `npm run generate:config-validator` after changing the schema)', async (t) => {
  const committed = readFileSync(GENERATED_VALIDATOR_PATH, 'utf8')
  t.ok(committed === configValidatorSource(), 'lib/cli/config-validator.generated.ts matches lib/cli/config-schema.ts')
})
