import { METHODS } from 'node:http'
import type { FastifyInstance } from 'fastify'

/**
 * Makes every method Node's HTTP parser accepts (WebDAV's PROPFIND, PURGE, LINK, ...) known
 * to Fastify, so the proxy route can forward it; Fastify's default list is much shorter and an
 * absolute-form request with any other method would get the framework's 404 instead. Added
 * methods are declared as carrying a body, so an application route using one parses it as usual.
 */
export function addForwardedMethods (fastify: FastifyInstance): void {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true })
  }
}
