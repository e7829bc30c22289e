// The errors of the capture file: a path the writer will not write at, and a file the repair will
// not touch. Made with @fastify/error, as the package's other coded errors are.

import { createError } from '@fastify/error'

/**
 * The writer's path is a symbolic link, a directory or another file that is not a regular file:
 * the capture stops rather than follow it or rotate it away.
 */
export const CaptureFileNotRegularError = createError<'FFP_ERR_CAPTURE_NOT_A_FILE', 500, [path: string]>(
  'FFP_ERR_CAPTURE_NOT_A_FILE',
  'capture file %s is a symbolic link, a directory or another special file: not written',
  500
)

/**
 * A file that does not start with the head the capture writes: `repairHarFile` does not touch it,
 * and a writer whose path names it stops rather than rotate it away.
 */
export const NotACaptureError = createError<'FFP_ERR_NOT_A_CAPTURE', 500, [path: string]>(
  'FFP_ERR_NOT_A_CAPTURE',
  '%s is not a HAR capture written by fastify-forward-proxy: left unchanged',
  500
)

/** The code of an error of this file. */
export type CaptureErrorCode = InstanceType<typeof CaptureFileNotRegularError>['code'] | InstanceType<typeof NotACaptureError>['code']
