/// `bytes` as lowercase hex digits, two a byte (digests; `bytea` values in PostgreSQL's hex form).
func lowercaseHex(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}
