// The part both Fastify CONNECT floors share (bench/floor-fastify-connect.mjs and
// bench/floor-fastify-connect-checked.mjs): Node's HTTP server hands each CONNECT to Fastify's
// router with a response bound to its socket, under the path `/`, as the plugin's listener does.

import { ServerResponse } from 'node:http'

/**
 * Routes every CONNECT `app`'s server receives into `app` under `/`, after `remember(req, {
 * target, socket, head })` keeps what the route's hooks and handler need (the target as
 * received, the client's socket and any bytes it sent after the head). Call once `app` is ready.
 */
export function routeConnectsThroughFastify (app, remember) {
  app.server.on('connect', (req, socket, head) => {
    socket.on('error', () => {})
    remember(req, { target: req.url, socket, head })
    req.url = '/'
    const response = new ServerResponse(req)
    response.shouldKeepAlive = false
    response.assignSocket(socket)
    app.routing(req, response)
  })
}
