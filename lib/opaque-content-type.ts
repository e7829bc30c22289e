// How the proxy route keeps Fastify from judging a request's Content-Type: the one place that
// swaps a raw request header under Fastify, relying on when Fastify reads it (before any
// content-type parser, after the preParsing hooks). test/opaque-content-type.test.ts fails
// if a Fastify release changes that.

import type { FastifyInstance, preParsingHookHandler } from 'fastify'
import type { IncomingMessage } from 'node:http'

/**
 * Fastify answers 415 to a `Content-Type` its own parser finds malformed, and 400 to a QUERY
 * without one, before any content-type parser runs. A proxy must forward such requests as they
 * are (the destination decides), so for the proxy route only the header is swapped for a media
 * type that lands in the proxy's catch-all parser, which puts the original back at once. The
 * application's preParsing hooks run before the swap and its later hooks after the restore, so
 * none of them sees the placeholder; it is back before forwarding compares `request.headers`
 * with the headers as received.
 */
const PLACEHOLDER_MEDIA_TYPE = 'application/x-fastify-forward-proxy-opaque'

/** Fastify's default bodyless methods, for which it never looks at Content-Type. */
export const METHODS_WITHOUT_BODY_PARSING: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE', 'CONNECT'])

const hiddenContentType = Symbol('fastify-forward-proxy.hiddenContentType')

type RequestWithHiddenContentType = IncomingMessage & { [hiddenContentType]?: string | undefined }

/** Route-level `preParsing` hook of the proxy route: hides the client's Content-Type from Fastify. */
export const hideContentTypeFromFastify: preParsingHookHandler = function (request, _reply, payload, done) {
  const raw = request.raw as RequestWithHiddenContentType
  if (!METHODS_WITHOUT_BODY_PARSING.has(raw.method ?? '')) {
    raw[hiddenContentType] = raw.headers['content-type']
    raw.headers['content-type'] = PLACEHOLDER_MEDIA_TYPE
  }
  done(null, payload)
}

/** Puts back the Content-Type hidden by {@link hideContentTypeFromFastify}; does nothing twice. */
export function restoreContentType (rawRequest: IncomingMessage): void {
  const raw = rawRequest as RequestWithHiddenContentType
  if (!(hiddenContentType in raw)) return
  const original = raw[hiddenContentType]
  delete raw[hiddenContentType]
  if (original === undefined) delete raw.headers['content-type']
  else raw.headers['content-type'] = original
}

/**
 * Leaves every body of `instance`'s routes unparsed: its content-type parsers are removed and
 * one catch-all parser takes every request without reading its body (it puts back the
 * Content-Type {@link hideContentTypeFromFastify} hid). The routes' handlers stream the body.
 */
export function leaveBodiesUnparsed (instance: FastifyInstance): void {
  instance.removeAllContentTypeParsers()
  instance.addContentTypeParser('*', (request, _payload, done) => {
    restoreContentType(request.raw)
    done(null)
  })
}
