import IngestJSON
import Testing

/// The census of members a plan does not read: exact per path, the same whether a record
/// is counted from the scan or from its parsed value, and bounded.
@Suite struct MemberCensusTests {
    /// Reads `id`, `title` and the object `photographer` (its `id` and `name`).
    static func plan() -> JSONCapturePlan {
        var plan = JSONCapturePlan()
        _ = plan.slot(at: ["id"])
        _ = plan.slot(at: ["title"])
        let node = plan.node(at: ["photographer"])
        _ = plan.slot(at: ["id"], from: node)
        _ = plan.slot(at: ["name"], from: node)
        return plan
    }

    /// Counts `records` as the row mapper does: the scan, then the parsed value when the scan gives up.
    static func census(_ records: [String], plan start: JSONCapturePlan = plan()) -> MemberCensus {
        var plan = start
        let counter = MemberCounter()
        var captures = [JSONCapture](repeating: .absent, count: max(1, plan.slotCount))
        for record in records {
            let bytes = Array(record.utf8)
            bytes.withUnsafeBytes { bytes in
                captures.withUnsafeMutableBufferPointer { captures in
                    if plan.capture(bytes, into: captures, log: counter.log) {
                        if !counter.countKnown() { counter.count(scanned: bytes, plan: &plan) }
                    } else {
                        counter.count(parsing: bytes, plan: &plan)
                    }
                }
            }
        }
        return counter.take()
    }

    @Test func eachUnmappedPathCountsTheRecordsThatHadItNestedOnesByTheirFullPath() {
        let census = Self.census([
            #"{"id":"1","title":"a","camera":"X100","photographer":{"id":1,"name":"Ana","site":"a.example"}}"#,
            #"{"id":"2","camera":null,"exif":{"iso":200,"lens":{"mm":35}}}"#,
            #"{"id":"3","title":"c","photographer":{"id":2,"site":"b.example","pro":true}}"#,
            #"{"id":"4"}"#,
        ])
        #expect(census == MemberCensus(unmapped: ["camera": 2, "exif": 1, "photographer.site": 2, "photographer.pro": 1]))
        #expect(census.ranked.map(\.path) == ["camera", "photographer.site", "exif", "photographer.pro"])
    }

    @Test func recordsTheScanGivesUpOnAreCountedTheSameFromTheirParsedValue() {
        // An escaped key and a repeated read key send the record to the parser; the census must not notice.
        let scanned = Self.census([#"{"id":"1","camera":"a","photographer":{"id":1,"site":"x"}}"#,
                                   #"{"id":"2","camera":"b","title":"t"}"#])
        let parsed = Self.census([#"{"id":"1","c\u0061mera":"a","photographer":{"id":1,"site":"x"}}"#,
                                  #"{"id":"2","camera":"b","title":"t","title":"u"}"#])
        #expect(scanned == MemberCensus(unmapped: ["camera": 2, "photographer.site": 1]))
        #expect(parsed == MemberCensus(unmapped: ["camera": 2, "photographer.site": 1], repeated: 1))
    }

    @Test func aRecordNamingAMemberTwiceCountsOnceForThePathAndOnceAsRepeated() {
        let census = Self.census([
            #"{"id":"1","camera":"a","camera":"b"}"#,                   // an unmapped member twice (the scan sees it)
            #"{"id":"2","title":"a","title":"b","camera":"c"}"#,        // a read member twice (the parser sees it)
            #"{"id":"3","photographer":{"id":1,"site":"x","site":"y"}}"#,
            #"{"id":"4","camera":"d"}"#,
        ])
        #expect(census == MemberCensus(unmapped: ["camera": 3, "photographer.site": 1], repeated: 3))
    }

    @Test func aLaterRecordIsCountedFromWhatTheFirstTaughtThePlanAndTakeStartsAfresh() {
        var plan = Self.plan()
        let counter = MemberCounter()
        var captures = [JSONCapture](repeating: .absent, count: plan.slotCount)
        func count(_ record: String) -> Bool {
            Array(record.utf8).withUnsafeBytes { bytes in
                captures.withUnsafeMutableBufferPointer { captures in
                    #expect(plan.capture(bytes, into: captures, log: counter.log))
                    let known = counter.countKnown()
                    if !known { counter.count(scanned: bytes, plan: &plan) }
                    return known
                }
            }
        }
        #expect(!count(#"{"id":"1","camera":"a"}"#), "first met: learned")
        #expect(count(#"{"id":"2","camera":"b"}"#), "then counted in the scan")
        #expect(counter.take() == MemberCensus(unmapped: ["camera": 2]))
        #expect(count(#"{"id":"3","camera":"c"}"#))
        #expect(counter.take() == MemberCensus(unmapped: ["camera": 1]))
        #expect(counter.take() == MemberCensus())
    }

    @Test func aRecordWithMoreUnmappedMembersThanTheLogFirstHoldsIsCountedWhole() {
        let members = (0..<150).map { "\"m\($0)\":\($0)" }.joined(separator: ",")
        let census = Self.census(["{\"id\":\"1\",\(members)}", "{\"id\":\"2\",\(members)}"])
        #expect(census.unmapped.count == 150 && census.unmapped.values.allSatisfy { $0 == 2 })
    }

    @Test func pathsPastTheLimitAreCountedTogetherAndThePlanStopsGrowing() {
        let records = (0..<(MemberCounter.pathLimit + 10)).map { "{\"id\":\"\($0)\",\"k\($0)\":1}" }
        let census = Self.census(records + [#"{"id":"x","k0":1,"k300":1,"k301":1}"#])
        #expect(census.unmapped.count == MemberCounter.pathLimit + 1)
        #expect(census.unmapped["k0"] == 2)
        #expect(census.unmapped[MemberCensus.otherPaths] == 11, "the 10 past the limit, and the last record once for its two")
    }

    /// Found by probing: members past the limit share one counter, and the scan's census
    /// counted a record with two of them as naming a member twice (the parser's did not).
    @Test func twoMembersPastTheLimitInOneRecordAreNoRepetitionWhicheverWayTheRecordIsCounted() {
        let filler = "{\"id\":\"0\"," + (0..<MemberCounter.pathLimit).map { "\"k\($0)\":1" }.joined(separator: ",") + "}"
        let scanned = Self.census([filler, #"{"id":"1","x":1,"y":2}"#])
        // An escaped key sends the same members to the parser.
        let parsed = Self.census([filler, #"{"\u0069d":"1","x":1,"y":2}"#])
        #expect(scanned.repeated == 0 && parsed.repeated == 0)
        #expect(scanned.unmapped[MemberCensus.otherPaths] == 1 && parsed.unmapped[MemberCensus.otherPaths] == 1)
        // A key named twice among them is a repetition all the same.
        let twice = Self.census([filler, #"{"id":"1","x":1,"x":2}"#])
        let twiceParsed = Self.census([filler, #"{"\u0069d":"1","x":1,"x":2}"#])
        #expect(twice.repeated == 1 && twiceParsed.repeated == 1)
    }

    @Test func aPlanReadingASelectionCountsWhatTheSelectiveParseLeavesOut() {
        var selection = JSONSelection.none
        selection.keep(["id"])
        selection.keep(["photographer"], inside: {
            var inside = JSONSelection.none
            inside.keep(["id"])
            return inside
        }())
        selection.keep(["tags"])
        let counter = MemberCounter()
        var plan = JSONCapturePlan(reading: selection)
        for record in [#"{"id":1,"tags":[{"x":1}],"photographer":{"id":1,"name":"a"},"camera":"c"}"#,
                       #"{"id":2,"photographer":"just a name","camera":"d"}"#] {
            Array(record.utf8).withUnsafeBytes { counter.count($0, plan: &plan) }
        }
        #expect(counter.take() == MemberCensus(unmapped: ["camera": 2, "photographer.name": 1]))
    }

    @Test func aRecordThatIsNotJSONOrNotAnObjectCountsNothing() {
        #expect(Self.census([#"{"id":"1","camera":"#, "[1,2]", "\"text\""]) == MemberCensus())
    }
}
