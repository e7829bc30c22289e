// The types of config-validator.generated.js, which scripts/generate-config-validator.ts writes.

import type { ValidateFunction } from 'ajv'

/** ./config-schema's validator, compiled ahead of time: the first error only, verbose. */
export declare const validate: ValidateFunction
