import { test } from 'tap'
import {
  derContext,
  derElement,
  derObjectIdentifier,
  derSmallInteger,
  derTime,
  derUnsignedInteger,
  objectIdentifierOf,
  readElement,
  timeOf
} from './helpers/internals'

// The encodings the leaf and development CA certificates are written with, checked byte for
// byte against X.690's rules, and read back with the reader the CA checks use.

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')

test('DER lengths: the short form up to 127 bytes, then the long form with as few length bytes as needed', async (t) => {
  for (const [size, header] of [[0, '0400'], [127, '047f'], [128, '048180'], [255, '0481ff'], [256, '04820100'], [65_536, '0483010000']] as const) {
    const element = derElement(0x04, new Uint8Array(size))
    t.equal(hex(element.subarray(0, header.length / 2)), header, `${size} content bytes: header ${header}`)
    t.equal(element.length, header.length / 2 + size, `${size} content bytes: nothing else written`)
    const read = readElement(element)
    t.equal(read.end - read.contentStart, size, `${size} content bytes: read back`)
  }
})

test('DER integers: minimal two\'s complement, a zero byte put in front of a high first bit', async (t) => {
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x7f))), '02017f', '0x7f as is')
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x80))), '02020080', '0x80 takes a leading zero')
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x00, 0x00, 0x7f))), '02017f', 'leading zero bytes dropped')
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x00, 0x00, 0xff))), '020200ff', 'dropped, then one put back for the high bit')
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x00, 0x00))), '020100', 'zero is one zero byte')
  t.equal(hex(derUnsignedInteger(Uint8Array.of(0x01, 0x00))), '02020100', 'inner zero bytes kept')
  t.equal(hex(derSmallInteger(2)), '020102', 'version 3 is INTEGER 2')
  t.equal(hex(derSmallInteger(0)), '020100', 'a path length of 0')
  t.equal(hex(derSmallInteger(300)), '0202012c', '300 in two bytes')
  t.throws(() => derSmallInteger(-1), RangeError, 'no negative numbers')
})

test('DER object identifiers: the first two arcs in one byte, the rest in base 128', async (t) => {
  for (const [dotted, encoding] of [
    ['2.5.29.17', '0603551d11'],
    ['1.2.840.113549.1.1.11', '06092a864886f70d01010b'],
    ['1.2.840.10045.4.3.2', '06082a8648ce3d040302'],
    ['2.999.3', '0603883703'] // X.690 8.19.5's example: the first subidentifier above 127
  ] as const) {
    t.equal(hex(derObjectIdentifier(dotted)), encoding, dotted)
    t.equal(objectIdentifierOf(readElement(derObjectIdentifier(dotted))), dotted, `${dotted} read back`)
  }
  t.throws(() => derObjectIdentifier('3.1'), RangeError, 'no first arc above 2')
  t.throws(() => derObjectIdentifier('1'), RangeError, 'two arcs at least')
})

test('X.509 times: UTCTime through 2049, GeneralizedTime from 2050, to the second', async (t) => {
  const last = new Date(Date.UTC(2049, 11, 31, 23, 59, 59, 999))
  t.equal(Buffer.from(derTime(last)).toString('latin1'), '\x17\x0d491231235959Z', 'the last second of 2049 is a UTCTime, milliseconds dropped')
  const first = new Date(Date.UTC(2050, 0, 1))
  t.equal(Buffer.from(derTime(first)).toString('latin1'), '\x18\x0f20500101000000Z', '2050 is a GeneralizedTime')
  t.equal(timeOf(readElement(derTime(last))), Date.UTC(2049, 11, 31, 23, 59, 59), 'read back')
  t.equal(timeOf(readElement(derTime(first))), first.getTime(), 'read back')
})

test('DER context-specific tags: [n] primitive for IMPLICIT primitive types, constructed otherwise', async (t) => {
  t.equal(hex(derContext(2, false, Buffer.from('a.example'))), '8209612e6578616d706c65', 'a dNSName is [2] primitive')
  t.equal(hex(derContext(3, true, Uint8Array.of(0x30, 0x00))), 'a3023000', 'the extensions are [3] constructed')
})
