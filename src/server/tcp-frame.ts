/** RFC 7766 §8 (RFC 1035 §4.2.2): a DNS message over TCP is preceded by its length in two octets. */
export function tcpFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(2 + message.length);
  frame.writeUInt16BE(message.length, 0);
  frame.set(message, 2);
  return frame;
}
