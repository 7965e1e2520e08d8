import Foundation

/// A key's text by its bytes (PostgreSQL compares text by its bytes: Swift's String
/// equality would make "é" and "e\u{301}" one key). Keys of up to 24 bytes, most keys, are
/// held inline: making, copying and storing one allocates nothing and counts no references.
struct TextKey: Hashable, Sendable {
    private enum Storage: Hashable, Sendable {
        /// The bytes in three words, zero-padded, and their count.
        case inline(UInt64, UInt64, UInt64, count: UInt8)
        case heap([UInt8])
    }

    private static let inlineCapacity = 24

    private let storage: Storage
    /// The bytes' hash, worked out once: a key is hashed again each time a dictionary finds,
    /// inserts or grows with it.
    private let digest: Int

    init(_ text: String) {
        var text = text
        self = text.withUTF8 { TextKey(UnsafeRawBufferPointer($0)) }
    }

    init(bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { TextKey($0) }
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        // The batch path's seeded hash, not SipHash: a few instructions a word (keys come from
        // feeds, so it is seeded per process all the same: see `FieldHasher`).
        var hasher = FieldHasher()
        hasher.mix(bytes)
        digest = Int(truncatingIfNeeded: hasher.value)
        if bytes.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            if !bytes.isEmpty { withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) } }
            storage = .inline(words.0, words.1, words.2, count: UInt8(bytes.count))
        } else {
            storage = .heap(Array(bytes))
        }
    }

    /// Calls `body` with the key's bytes.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        switch storage {
        case .inline(let first, let second, let third, let count):
            var words = (first, second, third)
            return try Swift.withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0[..<Int(count)])) }
        case .heap(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// The key as the text the lookups send.
    var text: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    static func == (lhs: TextKey, rhs: TextKey) -> Bool {
        guard lhs.digest == rhs.digest else { return false }
        // Word by word: the enum's own == copied both values out first, on every dictionary probe.
        switch (lhs.storage, rhs.storage) {
        case let (.inline(a0, a1, a2, count), .inline(b0, b1, b2, other)): return count == other && a0 == b0 && a1 == b1 && a2 == b2
        case let (.heap(left), .heap(right)): return left == right
        default: return false
        }
    }

    /// Whether this key sorts before `other` by its bytes, as PostgreSQL's "C" order does.
    func precedes(_ other: TextKey) -> Bool {
        withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                // An empty key has no buffer to compare: it sorts first.
                guard let left = mine.baseAddress, let right = theirs.baseAddress else { return mine.count < theirs.count }
                let order = memcmp(left, right, min(mine.count, theirs.count))
                return order != 0 ? order < 0 : mine.count < theirs.count
            }
        }
    }

    func hash(into hasher: inout Hasher) { hasher.combine(digest) }
}
