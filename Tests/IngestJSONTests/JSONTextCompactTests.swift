import Testing
@testable import IngestJSON

/// `JSONText.compactLength` judges from the bytes what `JSONValue.parse(…).description`
/// would write: where it answers, the answer is that text's length (and the bytes are that
/// text when nothing was dropped); where the full parser is needed, it says nil.
@Suite struct JSONTextCompactTests {
    static func length(_ text: String) -> Int? {
        Array(text.utf8).withUnsafeBytes { JSONText.compactLength($0) }
    }

    @Test(arguments: [
        #"[]"#, #"{}"#, #"["x","y"]"#, #"{"k":[-0,1E+2,2.5e-3,true,false,null,[],{}],"s":"a b","k":"again"}"#,
        #"[0,-1,10,1.0e10,123456789012345678901234567890,1e400]"#, #"[[[[["deep"]]]]]"#,
    ])
    func aCompactValueIsKeptByteForByte(_ text: String) throws {
        #expect(Self.length(text) == text.utf8.count)
        #expect(try JSONValue.parse(text).description == text)
    }

    @Test(arguments: [#"[ "x" , { "k" : [1, 2] } ]"#, "{\n\t\"a\" :\r\n [ ]\n}", #"[1 ,2]"#])
    func whitespaceOutsideStringsIsNotCounted(_ text: String) throws {
        let compact = try JSONValue.parse(text).description
        #expect(Self.length(text) == compact.utf8.count)
        #expect(compact.utf8.count < text.utf8.count)
    }

    /// Escapes and non-ASCII text are decoded and written again by the full parser; a
    /// malformed value is its to refuse.
    @Test(arguments: [
        #"["caf\u00e9"]"#, #"["a\"b"]"#, #"["a\\b"]"#, #"["a\/b"]"#, "[\"café\"]", "[\"a\u{01}b\"]", "[\"tab\there\"]",
        #"[01]"#, #"[1.]"#, #"[.5]"#, #"[1e]"#, #"[-]"#, #"[+1]"#, #"[1,]"#, #"[,1]"#, #"{"a"}"#, #"{"a":}"#, #"{a:1}"#,
        #"{"a":1,}"#, #"[tru]"#, #"[nul]"#, #"[True]"#, #"["open]"#, #"[1"#, #"[1]]"#, #"[1] 2"#, #"[1}"#, "", " ",
    ])
    func whatOnlyTheFullParserJudgesIsLeftToIt(_ text: String) {
        #expect(Self.length(text) == nil)
    }

    @Test func deeperThanTheLimitIsLeftToTheFullParser() throws {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(Self.length(deep) == nil)
        let limit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(Self.length(limit) == limit.utf8.count)
    }

    /// Random values of every form, written with random whitespace: where the check answers,
    /// it agrees with the full parser, and it answers whenever no string needs decoding.
    @Test func randomValuesAgreeWithTheFullParser() throws {
        var random = SplitMix64(seed: 40)
        func space() -> String { ["", "", " ", "\n", "\t ", "\r\n"][Int(random.next() % 6)] }
        func string(plain: inout Bool) -> String {
            let pieces = ["a", "b c", "x-y", "1", "", #"\""#, #"\u0041"#, "é"]
            var text = "\""
            for _ in 0..<Int(random.next() % 4) {
                let piece = pieces[Int(random.next() % UInt64(pieces.count))]
                if piece.contains("\\") || piece.utf8.contains(where: { $0 >= 0x80 }) { plain = false }
                text += piece
            }
            return text + "\""
        }
        func value(_ depth: Int, plain: inout Bool) -> String {
            switch depth > 4 ? random.next() % 4 : random.next() % 6 {
            case 0: return ["0", "-0", "12", "1.5", "-2e-3", "3E+4"][Int(random.next() % 6)]
            case 1: return ["true", "false", "null"][Int(random.next() % 3)]
            case 2, 3: return string(plain: &plain)
            case 4: return "[" + (0..<Int(random.next() % 4)).map { _ in space() + value(depth + 1, plain: &plain) + space() }.joined(separator: ",") + "]"
            default:
                return "{" + (0..<Int(random.next() % 4)).map { _ in
                    space() + string(plain: &plain) + space() + ":" + space() + value(depth + 1, plain: &plain) + space()
                }.joined(separator: ",") + "}"
            }
        }
        var answered = 0
        for _ in 0..<2_000 {
            var plain = true
            let text = space() + (random.next() % 2 == 0 ? "[" + value(1, plain: &plain) + "]" : "{\"k\":" + value(1, plain: &plain) + "}") + space()
            let compact = try JSONValue.parse(text).description
            if let length = Self.length(text) {
                answered += 1
                #expect(length == compact.utf8.count, "\(text)")
            }
            #expect((Self.length(text) != nil) == plain, "\(text)")
        }
        #expect(answered > 500)
    }
}
