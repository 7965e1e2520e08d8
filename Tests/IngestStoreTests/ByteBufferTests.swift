import Testing
@testable import IngestStore

/// `ByteBuffer`, the write paths' byte store: what it holds after appends of every kind,
/// across growth, must equal what an array given the same appends holds.
@Suite struct ByteBufferTests {
    @Test func appendsOfEveryKindHoldWhatAnArrayHolds() {
        var buffer = ByteBuffer(capacity: 1)
        var expected: [UInt8] = []
        var generator = SplitMix(seed: 7)
        for step in 0..<5_000 {
            switch generator.next() % 6 {
            case 0:
                let byte = UInt8(truncatingIfNeeded: step)
                buffer.append(byte)
                expected.append(byte)
            case 1:
                let bytes = (0..<Int(generator.next() % 300)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ step) }
                bytes.withUnsafeBytes { buffer.append($0) }
                expected += bytes
            case 2:
                let value = UInt32(truncatingIfNeeded: generator.next())
                buffer.appendBigEndian(value)
                expected += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
            case 3:
                let value = UInt16(truncatingIfNeeded: generator.next())
                buffer.appendLittleEndian(value)
                expected += [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)]
            case 4:
                // Not contiguous: appended byte by byte.
                let text = "café ☕ \(step)"
                buffer.append(contentsOf: text.utf8.reversed())
                expected += text.utf8.reversed()
            default:
                let text = "row \(step)\t"
                buffer.append(contentsOf: text.utf8)
                expected += text.utf8
            }
        }
        let (count, bytes) = (buffer.count, buffer.array)
        #expect(count == expected.count)
        #expect(bytes == expected)
    }

    @Test func aLengthWrittenAfterItsBytesLandsInItsPlace() {
        var buffer = ByteBuffer()
        buffer.append(0xAA)
        let start = buffer.count
        buffer.appendBigEndian(UInt32(0))
        buffer.append(contentsOf: Array(repeating: 0x41, count: 1_000))
        buffer.setBigEndian(UInt32(buffer.count - start - 4), at: start)
        let made = buffer.array
        #expect(Array(made.prefix(5)) == [0xAA, 0, 0, 0x03, 0xE8])
        buffer.removeAll()
        let emptied = buffer.isEmpty
        #expect(emptied)
        buffer.append(7)
        let after = buffer.array
        #expect(after == [7])
    }

    /// A small deterministic generator (the test's steps are the same on every run).
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
