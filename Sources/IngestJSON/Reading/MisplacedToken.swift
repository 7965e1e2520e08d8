/// Finds where yajl's grammar errors begin. yajl reports them past the token it refused,
/// and for some it steps back by the token's length without its quotes, so a refused
/// string or multi-digit number was located a byte or two off. Walking the record's
/// tokens from its first byte finds the one where JSON's grammar breaks, exactly.
enum MisplacedToken {
    private enum Expecting {
        case value, valueOrClose, keyOrClose, key, colon, commaOrClose
    }

    /// The grammar errors whose offsets yajl gives past (or inside) the token; its lexical
    /// errors, and the ones about a single byte, it locates right.
    static let grammarMessages = [
        "after key and value, inside map, I expect ',' or '}'",
        "after array element, I expect ',' or ']'",
        "object key and value must be separated by a colon (':')",
        "invalid object key (must be a string)",
        "unallowed token at this point in JSON text",
    ]

    /// The offset in `bytes` (one JSON value, from its first byte) of the first token that
    /// JSON's grammar does not allow where it stands, or nil when there is none in `bytes`
    /// (or the value ends first).
    static func offset(in bytes: UnsafeRawBufferPointer) -> Int? {
        var objects: [Bool] = []
        var expecting = Expecting.value
        var at = 0
        func afterValue() -> Bool {
            guard !objects.isEmpty else { return false }
            expecting = .commaOrClose
            return true
        }
        while at < bytes.count {
            let byte = bytes[at]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                at += 1
                continue
            }
            let start = at
            var end = at + 1
            if byte == UInt8(ascii: "\"") {
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                guard end < bytes.count else { return nil }
                end += 1
            } else if byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) {
                end = numberEnd(bytes, from: at)
            } else if !"{}[],:".utf8.contains(byte) {
                // A literal, as yajl's lexer reads one: letters (`12true` is two tokens, `truefalse` one).
                while end < bytes.count, (bytes[end] | 0x20) >= UInt8(ascii: "a") && (bytes[end] | 0x20) <= UInt8(ascii: "z") { end += 1 }
            }
            at = end
            switch (expecting, byte) {
            case (.value, UInt8(ascii: "{")), (.valueOrClose, UInt8(ascii: "{")):
                objects.append(true)
                expecting = .keyOrClose
            case (.value, UInt8(ascii: "[")), (.valueOrClose, UInt8(ascii: "[")):
                objects.append(false)
                expecting = .valueOrClose
            case (.value, _) where !"{}[],:".utf8.contains(byte), (.valueOrClose, _) where !"{}[],:".utf8.contains(byte):
                guard afterValue() else { return nil }
            case (.keyOrClose, UInt8(ascii: "\"")), (.key, UInt8(ascii: "\"")):
                expecting = .colon
            case (.colon, UInt8(ascii: ":")):
                expecting = .value
            case (.commaOrClose, UInt8(ascii: ",")):
                expecting = objects.last! ? .key : .value
            case (.keyOrClose, UInt8(ascii: "}")), (.valueOrClose, UInt8(ascii: "]")),
                 (.commaOrClose, UInt8(ascii: "}")) where objects.last!, (.commaOrClose, UInt8(ascii: "]")) where !objects.last!:
                objects.removeLast()
                guard afterValue() else { return nil }
            default:
                return start
            }
        }
        return nil
    }

    /// Past the number at `start`, as yajl's lexer reads one: `-`, then `0` alone or digits,
    /// then a fraction and an exponent if given (`01` is two tokens, `0` and `1`).
    private static func numberEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var at = start
        func digits() { while at < bytes.count, bytes[at] >= UInt8(ascii: "0") && bytes[at] <= UInt8(ascii: "9") { at += 1 } }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        if at < bytes.count, bytes[at] == UInt8(ascii: "0") { at += 1 } else { digits() }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            digits()
        }
        if at < bytes.count, bytes[at] | 0x20 == UInt8(ascii: "e") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            digits()
        }
        return max(at, start + 1)
    }
}
