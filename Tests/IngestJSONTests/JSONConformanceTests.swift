import Foundation
import Testing
@testable import IngestJSON

/// Each place where yajl 2.1 accepts text that RFC 8259 forbids (found by probing yajl
/// with every case), closed in the reader with a located error, whatever the read size.
@Suite struct JSONConformanceTests {
    @Test(arguments: [
        ([UInt8]("[1,".utf8) + [0x0C] + [UInt8]("2]".utf8), 3, "a form feed (0x0C) is not JSON whitespace"),
        ([UInt8]("[1]".utf8) + [0x0B], 3, "a vertical tab (0x0B) is not JSON whitespace"),
        ([UInt8]("[\"".utf8) + [0xC0, 0x80] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: an overlong encoding (C0 80)"),
        ([UInt8]("[\"".utf8) + [0xC1, 0xBF] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: an overlong encoding (C1 BF)"),
        ([UInt8]("[\"".utf8) + [0xE0, 0x80, 0x80] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: an overlong encoding (E0 80 …)"),
        ([UInt8]("[\"".utf8) + [0xF0, 0x80, 0x80, 0x80] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: an overlong encoding (F0 80 …)"),
        ([UInt8]("[\"ab".utf8) + [0xED, 0xA0, 0x80] + [UInt8]("\"]".utf8), 4, "invalid UTF-8: a UTF-16 surrogate encoded as UTF-8 (ED A0 …)"),
        ([UInt8]("[\"".utf8) + [0xED, 0xBF, 0xBF] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: a UTF-16 surrogate encoded as UTF-8 (ED BF …)"),
        ([UInt8]("[\"".utf8) + [0xF4, 0x90, 0x80, 0x80] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: a code point above U+10FFFF (F4 90 …)"),
        ([UInt8]("[\"".utf8) + [0xF7, 0xBF, 0xBF, 0xBF] + [UInt8]("\"]".utf8), 2, "invalid UTF-8: a code point above U+10FFFF (F7 BF …)"),
        ([UInt8]("{\"".utf8) + [0xC0, 0x80] + [UInt8]("\":1}".utf8), 2, "invalid UTF-8: an overlong encoding (C0 80)"),
    ])
    func whatYajlWouldAcceptIsALocatedError(_ bytes: [UInt8], _ offset: Int, _ message: String) throws {
        for readSize in [1, 2, 3, bytes.count] {
            let shape: FeedShape = bytes.first == UInt8(ascii: "{") ? .ndjson : .array
            let error = try #require(feedError(bytes, shape: shape, readSize: readSize), "read size \(readSize)")
            #expect(error.message.hasPrefix(message), "read size \(readSize): \(error.message)")
            // A sequence cut by a read is reported where the read after it begins.
            if readSize >= bytes.count { #expect(error.position.byteOffset == offset) }
        }
    }

    /// The search skips 32 bytes at a time; a forbidden byte in any lane of a run of plain
    /// text, or just past one, is found at its own offset, and valid multi-byte text is not.
    @Test(arguments: [
        ([0x0C] as [UInt8], "a form feed (0x0C)"),
        ([0x0B], "a vertical tab (0x0B)"),
        ([0xC0, 0x80], "invalid UTF-8: an overlong encoding (C0 80)"),
        ([0xED, 0xA0, 0x80], "invalid UTF-8: a UTF-16 surrogate encoded as UTF-8 (ED A0 …)"),
        ([0xF4, 0x90, 0x80, 0x80], "invalid UTF-8: a code point above U+10FFFF (F4 90 …)"),
    ])
    func aForbiddenByteAfterAnyRunOfPlainTextIsFoundWhereItIs(_ forbidden: [UInt8], _ message: String) throws {
        for padding in 0..<70 {
            // A form feed or vertical tab outside a string (as whitespace); the others inside one.
            // At least 32 plain bytes follow, so that the byte passes through every lane of a whole
            // 32-byte step rather than the bytewise tail.
            let outside = forbidden == [0x0C] || forbidden == [0x0B]
            let before = outside ? [UInt8]("[\"\(String(repeating: "a", count: padding))\",".utf8)
                                 : [UInt8]("[\"\(String(repeating: "é", count: padding % 3))\(String(repeating: "a", count: padding))".utf8)
            let after = outside ? [UInt8]("\(String(repeating: " ", count: 40))2]".utf8)
                                : [UInt8]("\(String(repeating: "b", count: 40))\"]".utf8)
            let error = try #require(feedError(before + forbidden + after), "padding \(padding)")
            #expect(error.message.hasPrefix(message), "padding \(padding): \(error.message)")
            #expect(error.position.byteOffset == before.count, "padding \(padding)")
        }
    }

    @Test func longRunsOfValidMultiByteTextRead() throws {
        for padding in 0..<70 {
            let text = "[\"\(String(repeating: "a", count: padding))é中\u{10FFFF}\u{D7FF}\(String(repeating: "ü", count: padding))\",\t\r\n1]"
            #expect(try readRecords(Array(text.utf8)).count == 2, "padding \(padding)")
        }
    }

    @Test func validTextNearTheEdgesStillReads() throws {
        // U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF, and a tab, CR and LF.
        let text = "[\"\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFF}\u{10000}\u{10FFFF}\",\t\r\n1]"
        for readSize in [1, 2, 3, 5, 64] {
            #expect(try readRecords(Array(text.utf8), readSize: readSize).count == 2, "read size \(readSize)")
        }
    }
}
