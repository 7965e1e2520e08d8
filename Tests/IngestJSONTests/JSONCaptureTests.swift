import IngestJSON
import Testing

@Suite struct JSONCaptureTests {
    static let plan: (plan: JSONCapturePlan, id: Int, title: Int, views: Int, photographer: Int, name: Int, photographerID: Int) = {
        var plan = JSONCapturePlan()
        let id = plan.slot(at: ["id"])
        let title = plan.slot(at: ["title"])
        let views = plan.slot(at: ["stats", "views"])
        let photographer = plan.slot(at: ["photographer"])
        let node = plan.node(at: ["photographer"])
        let name = plan.slot(at: ["name"], from: node)
        let photographerID = plan.slot(at: ["id"], from: node)
        return (plan, id, title, views, photographer, name, photographerID)
    }()

    func capture(_ record: String) -> [JSONCapture]? {
        let plan = Self.plan.plan
        var captures = [JSONCapture](repeating: .absent, count: plan.slotCount)
        let bytes = Array(record.utf8)
        let ok = bytes.withUnsafeBytes { record in captures.withUnsafeMutableBufferPointer { plan.capture(record, into: $0) } }
        return ok ? captures : nil
    }

    func text(_ record: String, _ capture: JSONCapture) -> String {
        String(decoding: Array(record.utf8)[Int(capture.start)..<Int(capture.end)], as: UTF8.self)
    }

    @Test func findsEachPlannedPathWithItsKindAndBytes() throws {
        let record = #"{"id":"1", "skip":[{"x":"}"}], "title":"a\"b", "stats":{"views":1.5e3,"other":null}, "photographer":{"name":"Ana","id":7}}"#
        let captures = try #require(capture(record))
        let plan = Self.plan
        #expect(captures[plan.id].kind == .string && text(record, captures[plan.id]) == "1")
        #expect(captures[plan.title].kind == .escapedString && text(record, captures[plan.title]) == #"a\"b"#)
        #expect(captures[plan.views].kind == .number && text(record, captures[plan.views]) == "1.5e3")
        #expect(captures[plan.photographer].kind == .object)
        #expect(text(record, captures[plan.photographer]) == #"{"name":"Ana","id":7}"#)
        #expect(captures[plan.name].kind == .string && text(record, captures[plan.name]) == "Ana")
        #expect(captures[plan.photographerID].kind == .number && text(record, captures[plan.photographerID]) == "7")
    }

    @Test func whatARecordLacksIsAbsentAndAScalarWhereAnObjectIsPlannedIsCapturedAsIs() throws {
        let captures = try #require(capture(#"{"photographer":"p7","title":null}"#))
        #expect(captures[Self.plan.id] == .absent)
        #expect(captures[Self.plan.title].kind == .null)
        #expect(captures[Self.plan.photographer].kind == .string)
        #expect(captures[Self.plan.name] == .absent)
    }

    @Test(arguments: [
        #"{"id":"1","id":"2"}"#,                  // a key twice: the last would win
        #"{"i\u0064":"1"}"#,                      // an escaped key
        #"{"id":"\uD800"}"#,                      // a lone surrogate
        "{\"id\":\"\u{C0}\"}",                    // not ASCII but fine: captured (checked below)
        #"{"id":"1""#,                            // truncated
        #"{"id":"1"} x"#,                         // something after the record
        #"[1,2]"#,                                // not an object
        #"{"photographer":{"id":1,"id":2}}"#,     // a key twice in a nested object
    ])
    func leavesToTheFullParserWhatItDoesNotVouchFor(record: String) {
        if record.contains("\u{C0}") {
            #expect(capture(record) != nil)
        } else {
            #expect(capture(record) == nil)
        }
    }

    @Test func refusesUTF8FormsSwiftRefuses() {
        let plan = Self.plan.plan
        var captures = [JSONCapture](repeating: .absent, count: plan.slotCount)
        let overlong: [UInt8] = Array(#"{"id":""#.utf8) + [0xC0, 0x80] + Array(#""}"#.utf8)
        let ok = overlong.withUnsafeBytes { record in captures.withUnsafeMutableBufferPointer { plan.capture(record, into: $0) } }
        #expect(!ok)
    }
}

@Suite struct JSONCaptureKeyLookupTests {
    /// Keys of every length the look-up compares differently (none, under 4, 4–7, 8–16,
    /// longer), many sharing a length, a first and a last byte, so that buckets collide
    /// (63 in all: the scan leaves objects with more planned keys to the full parser).
    static let keys: [String] = [""] + (10..<48).map { "k\($0)" } + (0..<19).map { String(repeating: "x", count: $0 + 1) + "y" }
        + ["abcdefgh", "abcdefgX", "Xbcdefgh", "abcdXfgh", String(repeating: "long key ", count: 5) + "end"]

    @Test func findsEveryKeyOfALargeObjectAndNoKeyThatOnlyLooksLikeOne() throws {
        var plan = JSONCapturePlan()
        let slots = Self.keys.map { plan.slot(at: [$0]) }
        // Keys the plan does not read, each one byte from a planned key.
        let lookalikes = ["k99", "k", "abcdefgY", "xxxxz", String(repeating: "long key ", count: 5) + "enD"]
        let members = (Self.keys + lookalikes).enumerated().shuffled().map { "\"\($0.element)\":\($0.offset)" }
        let record = Array(("{" + members.joined(separator: ",") + "}").utf8)
        var captures = [JSONCapture](repeating: .absent, count: plan.slotCount)
        let ok = record.withUnsafeBytes { bytes in captures.withUnsafeMutableBufferPointer { plan.capture(bytes, into: $0) } }
        #expect(ok)
        #expect(Self.keys.count == 63)
        for (index, key) in Self.keys.enumerated() {
            let capture = captures[slots[index]]
            #expect(capture.kind == .number, "\(key)")
            #expect(String(decoding: record[Int(capture.start)..<Int(capture.end)], as: UTF8.self) == "\(index)", "\(key)")
        }
    }
}
