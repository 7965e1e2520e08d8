@testable import IngestStore
import Testing

/// The batch path's hash of keys and written fields cannot be steered by a feed: its
/// secrets are drawn per process, and no pair of inputs collides whatever they are.
@Suite struct FieldHasherTests {
    static func hash(_ words: [UInt64], _ hasher: FieldHasher = FieldHasher()) -> UInt64 {
        var hasher = hasher
        for word in words { hasher.mix(word) }
        return hasher.value
    }

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hasher = FieldHasher()
        hasher.mix(bytes)
        return hasher.value
    }

    /// With a multiply mod 2^64 (the hasher before), flipping the top bit of one word and
    /// bits 63 and 31 of the next gave the same state for every seed: a feed could carry
    /// keys that all collide, or a changed related object that hashes as it did unchanged.
    @Test(arguments: [0, 1, 0xDEAD_BEEF, UInt64.max])
    func theTopBitDifferenceOfAPlainMultiplyNoLongerCollides(_ first: UInt64) {
        let second: UInt64 = 0x0123_4567_89AB_CDEF
        let flipped = [first ^ (1 << 63), second ^ (1 << 63 | 1 << 31)]
        for seed: UInt64 in [0, 42, 0x9E37_79B9_7F4A_7C15] {
            let hasher = FieldHasher(seed: seed, secret: 0xFF51_AFD7_ED55_8CCD)
            #expect(Self.hash([first, second], hasher) != Self.hash(flipped, hasher), "seed \(seed)")
        }
        #expect(Self.hash([first, second]) != Self.hash(flipped))
    }

    @Test func theSameInputHashesTheSameWithinAProcessAndDifferentlyUnderOtherSecrets() {
        let words: [UInt64] = [3, 0x6E6F_7374_7261_7061, 17]
        #expect(Self.hash(words) == Self.hash(words))
        let a = Self.hash(words, FieldHasher(seed: 1, secret: 0x1234_5678_9ABC_DEF1))
        let b = Self.hash(words, FieldHasher(seed: 2, secret: 0x1234_5678_9ABC_DEF1))
        let c = Self.hash(words, FieldHasher(seed: 1, secret: 0x0FED_CBA9_8765_4321))
        #expect(a != b && a != c && b != c)
    }

    /// Keys that differ in one byte, or only in length, spread over the cache's slots.
    @Test func shortKeysSpreadOverTheSlots() {
        var slots = Set<UInt64>()
        for number in 0..<4_096 {
            let key = Array("photographer-\(number)".utf8)
            slots.insert(key.withUnsafeBytes { Self.hash($0) } & 4_095)
        }
        // 4,096 keys into 4,096 slots at random fill about 63% of them.
        #expect(slots.count > 2_400, "\(slots.count) slots")
        let empty = [UInt8]().withUnsafeBytes { Self.hash($0) }
        let zero = [UInt8](repeating: 0, count: 8).withUnsafeBytes { Self.hash($0) }
        #expect(empty != zero && empty != 0 && zero != 0)
    }
}
