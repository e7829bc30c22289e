'use strict'

const neostandard = require('neostandard')

module.exports = [
  ...neostandard({
    ts: true,
    ignores: [
      // .gitignore's: node_modules/, dist/ (the build), .tap/ (tap's runs), .forward-proxy/ (the development CA)
      ...neostandard.resolveIgnoresFromGitignore(),
      'coverage/',
      'bench/results/',
      // Written by scripts/generate-config-validator.ts (ajv's standalone code).
      'lib/cli/config-validator.generated.js'
    ]
  }),
  {
    name: 'fastify-forward-proxy/rules',
    rules: {
      // `void promise` marks a promise deliberately left floating (and `void x` an unused value in the type tests).
      'no-void': ['error', { allowAsStatement: true }],
      // It cannot see a flag that an event handler sets while the loop awaits, the pattern of every loop it flagged here.
      'no-unmodified-loop-condition': 'off',
      // See docs/development.md#lint: a signature or a call stays on one line, nothing hides past a pane's edge.
      '@stylistic/max-len': ['error', {
        code: 160,
        ignoreStrings: true,
        ignoreTemplateLiterals: true,
        ignoreRegExpLiterals: true,
        ignoreUrls: true
      }]
    }
  }
]
