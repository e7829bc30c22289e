// The JSON Schema of the configuration file.

/**
 * JSON Schema (draft-07) of the `forward-proxy` configuration file.
 * Unknown keys are refused so a typo never silently falls back to a default.
 */
export const CONFIG_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  additionalProperties: false,
  properties: {
    listen: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['port'],
        properties: {
          host: { type: 'string', minLength: 1 },
          port: { type: 'integer', minimum: 0, maximum: 65535 },
          tls: {
            type: 'object',
            additionalProperties: false,
            required: ['cert', 'key'],
            properties: { cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } }
          },
          // HTTP/2 needs TLS (ALPN h2); config.ts refuses `http2: true` without `tls` by name.
          http2: { type: 'boolean' }
        }
      }
    },
    // Without it, a listener on a non-loopback address needs `users` (lib/cli/build-server.ts).
    allowAnonymous: { type: 'boolean' },
    users: {
      type: 'object',
      // Basic credentials are "name:password", so a name cannot hold a colon.
      propertyNames: { minLength: 1, pattern: '^[^:]*$' },
      additionalProperties: {
        description: 'a non-empty string (the password) or an object { "password", and optionally "allowedHosts" (host patterns), "secrets" (secret names), "maxConcurrentTunnels", "requestsPerMinute" (positive integers), "mode" ("enforce" or "report") }',
        oneOf: [
          { type: 'string', minLength: 1 },
          {
            type: 'object',
            additionalProperties: false,
            required: ['password'],
            properties: {
              password: { type: 'string', minLength: 1 },
              allowedHosts: { type: 'array', items: { type: 'string', minLength: 1 } },
              secrets: { type: 'array', items: { type: 'string', minLength: 1 } },
              maxConcurrentTunnels: { type: 'integer', minimum: 1 },
              requestsPerMinute: { type: 'integer', minimum: 1 },
              mode: { enum: ['enforce', 'report'] }
            }
          }
        ]
      }
    },
    authFailureLimit: {
      description: 'false, or { maxFailures, window } (wrong credentials per client address per window of milliseconds)',
      oneOf: [
        { const: false },
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            maxFailures: { type: 'integer', minimum: 1, maximum: 2147483647 },
            window: { type: 'integer', minimum: 1, maximum: 2147483647 }
          }
        }
      ]
    },
    destinations: {
      type: 'object',
      additionalProperties: false,
      properties: {
        allowedHosts: { type: 'array', items: { type: 'string', minLength: 1 } },
        deniedHosts: { type: 'array', items: { type: 'string', minLength: 1 } },
        allowedPorts: {
          description: '"*" or an array of port numbers from 1 to 65535',
          oneOf: [
            { const: '*' },
            { type: 'array', items: { type: 'integer', minimum: 1, maximum: 65535 } }
          ]
        },
        allowPrivateNetworks: { type: 'boolean' },
        allowedNetworks: { type: 'array', items: { type: 'string', minLength: 1 } },
        // "report": allowedHosts and deniedHosts log what they would refuse instead of refusing it.
        mode: { enum: ['enforce', 'report'] }
      }
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxConcurrentTunnels: { type: 'integer', minimum: 1 },
        tunnelIdleTimeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
        httpActivityTimeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
        connectTimeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
        firstByteTimeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
        maxConcurrentRequests: { type: 'integer', minimum: 1, maximum: 2147483647 },
        maxStreamResets: { type: 'integer', minimum: 1, maximum: 2147483647 },
        tunnelSetupWait: { type: 'integer', minimum: 0, maximum: 60000 }
      }
    },
    interception: {
      type: 'object',
      additionalProperties: false,
      // `hosts` may be left out when `secrets` name the hosts to intercept (config.ts).
      properties: {
        hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        ca: {
          type: 'object',
          additionalProperties: false,
          required: ['cert', 'key'],
          properties: { cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } }
        },
        est: {
          type: 'object',
          additionalProperties: false,
          required: ['url'],
          dependencies: { username: ['password'], password: ['username'], clientCert: ['clientKey'], clientKey: ['clientCert'] },
          properties: {
            url: { type: 'string', pattern: '^https://', description: 'an https:// URL of the EST server (https://host[:port])' },
            label: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', description: '1 to 64 letters, digits, "-" or "_"' },
            username: { type: 'string', minLength: 1, pattern: '^[^:]*$', description: 'a non-empty user name without ":"' },
            password: { type: 'string', minLength: 1 },
            clientCert: { type: 'string', minLength: 1 },
            clientKey: { type: 'string', minLength: 1 },
            ca: { type: 'string', minLength: 1 },
            timeout: { type: 'integer', minimum: 1, maximum: 600000 }
          }
        },
        trustedDestinationCa: { type: 'string', minLength: 1 },
        clientProtocols: { enum: ['http1', 'http2', 'http1AndHttp2'] },
        handshakeTimeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
        passthroughOnClientRefusal: {
          type: 'object',
          additionalProperties: false,
          required: ['after', 'for'],
          properties: {
            after: { type: 'integer', minimum: 1, maximum: 1000 },
            for: { type: 'integer', minimum: 1, maximum: 2147483647 }
          }
        }
      }
    },
    headers: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['hosts'],
        properties: {
          hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          set: { type: 'object', additionalProperties: { type: 'string' } },
          remove: { type: 'array', items: { type: 'string', minLength: 1 } },
          setResponse: { type: 'object', additionalProperties: { type: 'string' } },
          removeResponse: { type: 'array', items: { type: 'string', minLength: 1 } },
          tlsOnly: { type: 'boolean' }
        }
      }
    },
    // Named credentials for header rules ({{secret:NAME}}), read at start-up from an environment
    // variable or a file, never written here.
    secrets: {
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z0-9_.-]{1,64}$' },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['hosts'],
        properties: {
          env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'an environment variable name' },
          file: { type: 'string', minLength: 1 },
          hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          placeholder: { type: 'string', pattern: '^[A-Za-z0-9._~-]{8,128}$', description: '8 to 128 letters, digits, ".", "-", "_" or "~"' }
        }
      }
    },
    // Where users' rates, tunnel slots and the authentication lockout are counted for every replica.
    redis: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: { type: 'string', pattern: '^rediss?://', description: 'a URL redis://host:port/db or rediss://host:port/db' },
        password: {
          type: 'object',
          additionalProperties: false,
          properties: {
            env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'an environment variable name' },
            file: { type: 'string', minLength: 1 }
          }
        },
        ca: { type: 'string', minLength: 1 },
        keyPrefix: { type: 'string', minLength: 1 },
        onError: { enum: ['allow', 'deny'] },
        timeout: { type: 'integer', minimum: 1, maximum: 60000 },
        leaseTime: { type: 'integer', minimum: 300, maximum: 3600000 }
      }
    },
    dataDirectory: { type: 'string', minLength: 1 },
    // Processes sharing the listeners (Node cluster); 1 runs everything in this process.
    workers: { type: 'integer', minimum: 1, maximum: 64 },
    releaseIdleMemory: {
      description: '"start", true, false, or the quiet time in milliseconds (an integer from 2000 to 86400000)',
      oneOf: [{ type: 'boolean' }, { const: 'start' }, { type: 'integer', minimum: 2000, maximum: 86400000 }]
    },
    log: {
      type: 'object',
      additionalProperties: false,
      properties: {
        level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
        format: { enum: ['json', 'pretty'] }
      }
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', minLength: 1 },
        port: { type: 'integer', minimum: 0, maximum: 65535 }
      }
    },
    propagateTraceContext: { type: 'boolean' },
    // The pseudonym in Via (the plugin's `via`): proxies chained to each other need different ones.
    via: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$", description: 'an HTTP token of 1 to 64 characters (letters, digits, - . _ ~ and the like)' },
    // Another proxy to reach destinations through: rules, or "environment" (HTTPS_PROXY, ...).
    upstreamProxies: {
      description: '"environment", or an array of { "hosts": [host patterns], "url": "direct" | "http://[user:password@]host:port" | "https://[user:password@]host:port", "ca": PEM file }',
      oneOf: [
        { const: 'environment' },
        {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['hosts', 'url'],
            properties: {
              hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
              url: { type: 'string', minLength: 1 },
              ca: { type: 'string', minLength: 1 }
            }
          }
        }
      ]
    },
    // HAR capture of what the proxy forwarded (the plugin's `capture`). config.ts requires `file`
    // (saying why) and checks the host patterns and user names.
    capture: {
      type: 'object',
      additionalProperties: false,
      properties: {
        file: { type: 'string', minLength: 1 },
        hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        users: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        maxBodyBytes: { type: 'integer', minimum: 0 },
        maxFileBytes: { type: 'integer', minimum: 1024 },
        keepFiles: { type: 'integer', minimum: 0, maximum: 1000 },
        redactHeaders: {
          type: 'array',
          description: 'an array of header names (letters, digits and ! # $ % & \' * + - . ^ _ ` | ~)',
          items: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", description: 'a header name (letters, digits and ! # $ % & \' * + - . ^ _ ` | ~)' }
        }
      }
    }
  }
} as const
