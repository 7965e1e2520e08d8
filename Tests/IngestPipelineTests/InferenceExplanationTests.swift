import Foundation
import IngestJSON
import IngestStore
import IngestTestSupport
import Testing
@testable import IngestPipeline

/// Inference keeps what it cannot convert exactly as text, and each line of its
/// explanation says what the sample held (issue 40).
@Suite struct InferenceExplanationTests {
    /// Infers a pipeline for `json` (written as `name` in `dir`) and imports the feed with it.
    func inferAndImport(_ name: String, _ json: String, in dir: TemporaryDirectory) throws -> (inference: PipelineInference.Inference, store: String) {
        let feed = try dir.write(name, Array(json.utf8))
        let inference = try PipelineInference.infer(feed: feed)
        let store = dir.file("store.sqlite")
        let report = try Importer(spec: inference.spec, options: .init(feed: feed, store: store)).run()
        #expect(report.rejected == 0)
        return (inference, store)
    }

    // MARK: - Strings of digits

    @Test func zipCodesWithLeadingZerosStayTextAndImportAsWritten() throws {
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("zips.json", #"[{"zip":94107},{"zip":"01234"},{"zip":"01001"}]"#, in: dir)
        #expect(inference.report.contains(#"Zip.zip: string (1 whole number, 2 strings of digits, 2 of which would not convert exactly: "01234" would become 1234; all are kept as text, the numbers as written)"#),
                "\(inference.report)")
        #expect(inference.spec.model.entity("Zip")?.attribute("zip")?.type == .string)
        // The number is stored as the JSON wrote it.
        #expect(try storeRows(store, "SELECT zip, typeof(zip) FROM Zip ORDER BY _pk") == ["94107|text", "01234|text", "01001|text"])
    }

    @Test(arguments: [("+7", "7"), (" 8", "8"), ("-0", "0"), ("00", "0"), ("007", "7")])
    func aStringOfDigitsThatANumberDoesNotPrintBackKeepsTheFieldText(_ text: String, _ number: String) throws {
        let json = "[{\"n\":5},{\"n\":\(JSONValue.string(text))}]"
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("values.json", json, in: dir)
        #expect(inference.report.contains("Value.n: string (1 whole number, 1 string of digits, 1 of which would not convert exactly: \(JSONValue.string(text)) would become \(number); all are kept as text, the numbers as written)"),
                "\(inference.report)")
        #expect(try storeRows(store, "SELECT n FROM Value ORDER BY _pk") == ["5", text])
    }

    @Test func stringsOfDigitsThatPrintBackStillMakeAnInteger() throws {
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("counts.json", #"[{"n":5},{"n":"7"},{"n":"12"},{"n":"-3"}]"#, in: dir)
        #expect(inference.report.contains("Count.n: int64 (1 whole number, 3 strings of digits, which convert exactly)"), "\(inference.report)")
        #expect(try storeRows(store, "SELECT n, typeof(n) FROM Count ORDER BY _pk") == ["5|integer", "7|integer", "12|integer", "-3|integer"])
    }

    /// Numeric strings beside fractions are never turned into doubles: "1.50" would come back as 1.5.
    @Test func numericStringsBesideFractionsStayText() throws {
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("prices.json", #"[{"p":1.5},{"p":"1.50"},{"p":"2"}]"#, in: dir)
        #expect(inference.report.contains("Price.p: string (could not decide: 2 strings, 1 number, 0 booleans; all are kept as text)"), "\(inference.report)")
        #expect(try storeRows(store, "SELECT p, typeof(p) FROM Price ORDER BY _pk") == ["1.5|text", "1.50|text", "2|text"])
    }

    // MARK: - Counting what was seen

    /// Found by probing: a whole number beyond 64 bits was left out of the count ("0
    /// strings, 2 numbers" for three numbers), and beside a fraction it made a double.
    @Test func aWholeNumberBeyond64BitsCountsAsANumber() throws {
        let dir = try TemporaryDirectory()
        let numbers = try dir.write("nums.json", Array(#"[{"n":1},{"n":2.5},{"n":18446744073709551616}]"#.utf8))
        #expect(try PipelineInference.infer(feed: numbers).report.contains(
            "Num.n: decimal (3 numbers, 1 whole number beyond 64 bits (up to 18446744073709551616) and 1 other number: kept exactly as decimal text, as no int64 or double holds them all)"))
        let mixed = try dir.write("mixed.json", Array(#"[{"n":1},{"n":2.5},{"n":18446744073709551616},{"n":"x"},{"n":true}]"#.utf8))
        let report = try PipelineInference.infer(feed: mixed).report
        #expect(report.contains("Mixed.n: string (could not decide: 1 string, 3 numbers, 1 boolean; all are kept as text)"), "\(report)")
    }

    // MARK: - Keys

    /// MongoDB exports of tweets: `_id` and `id` are there in every record, but as objects;
    /// an ObjectId (`{"$oid": …}`) is a key by the string inside, other objects are none.
    @Test func idLikeFieldsThatAreNoKeysAreNamedWithWhatTheyHold() throws {
        let dir = try TemporaryDirectory()
        let tweets = try dir.write("tweets.json", Array(#"""
            [{"_id":{"$oid":"a1"},"id":{"$numberLong":"5"},"text":"x"},{"_id":{"$oid":"a2"},"id":{"$numberLong":"6"},"text":"y"}]
            """#.utf8))
        let report = try PipelineInference.infer(feed: tweets).report
        #expect(report.contains(#"Tweet: 2 records sampled; unique by '_id.$oid' (MongoDB's ObjectId, present in every one); 'id' is not a key: its values are 2 objects ({"$numberLong": …}), not all whole numbers or all strings"#),
                "\(report)")
        let wrapped = try dir.write("events.json", Array(#"[{"_id":{"$oid":"a1","v":1},"text":"x"},{"_id":{"$oid":"a2","v":1},"text":"y"}]"#.utf8))
        #expect(try PipelineInference.infer(feed: wrapped).report.contains(#"Event: 2 records sampled; no key ('_id' is not a key: its values are 2 objects ({"$oid": …, "v": …}), not all whole numbers or all strings), so no uniqueness: every record is a new object. Importing the same feed again is skipped, but another feed that repeats these records adds them again"#))
        let partial = try dir.write("posts.json", Array(#"[{"id":5,"_id":"a","text":"x"},{"_id":"b","text":"y"},{"id":null,"_id":"c"}]"#.utf8))
        let chosen = try PipelineInference.infer(feed: partial)
        #expect(chosen.report.contains("Post: 3 records sampled; unique by '_id' (present in every one); 'id' is not a key: it is missing from 1 of the 3 records and null in 1 of them"),
                "\(chosen.report)")
        #expect(chosen.spec.model.entity("Post")?.uniquenessConstraints == [["id2"]], "`_id` is named id2 beside `id`")
        let none = try dir.write("readings.json", Array(#"[{"sensor":"a"},{"sensor":"b"}]"#.utf8))
        #expect(try PipelineInference.infer(feed: none).report.contains(
            "Reading: 2 records sampled; no id-like field (id, _id, uuid, key, code, readingId) and none named like an identity (url, email, isbn, cca3, …), so no uniqueness: every record is a new object. Importing the same feed again is skipped, but another feed that repeats these records adds them again"))
    }

    @Test func nestedObjectsWhoseIdIsNoKeySayWhatTheIdHeld() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("posts.json", Array(#"[{"id":1,"user":{"id":{"$numberLong":"5"},"n":1}},{"id":2,"user":{"id":"7","n":2}}]"#.utf8))
        let report = try PipelineInference.infer(feed: feed).report
        #expect(report.contains(#"Post.user: nested objects whose 'id' is not a key: its values are 1 string and 1 object (the object {"$numberLong": …}), not all whole numbers or all strings (unsure, so each stays with its record) → flattened into Post as user_…"#),
                "\(report)")
        #expect(report.contains("Post.user_id: values of mixed kinds (1 string and 1 object) → JSON text in the string attribute user_id"), "\(report)")
    }

    // MARK: - Arrays of plain values

    @Test func anArrayOfPlainValuesUnderAKeyIsNamedAndKeptAsJSONText() throws {
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("book.json", #"{"id":1,"tags":["a","b"]}"#, in: dir)
        #expect(inference.report == [
            "feed: one object with no array of records in it ('tags' holds 2 strings: plain values, not records): read as one record",
            "Book: 1 record sampled; unique by 'id' (present in every one)",
            "Book.id: int64 (1 whole number)",
            "Book.tags: arrays of plain values (1 array holding 2 strings) → JSON text in the string attribute tags",
        ])
        #expect(try storeRows(store, "SELECT id, tags FROM Book") == [#"1|["a","b"]"#])
    }

    @Test func arraysAreSaidAsSeenEmptyPlainOrMixed() throws {
        let dir = try TemporaryDirectory()
        let (inference, store) = try inferAndImport("items.json", #"""
            [{"id":1,"tags":["a","b"],"ns":[1,2.5,null],"e":[],"m":"x"},{"id":2,"tags":[],"ns":[3],"e":[],"m":["y"]}]
            """#, in: dir)
        for line in ["Item.tags: arrays of plain values (1 array holding 2 strings, 1 empty array) → JSON text in the string attribute tags",
                     "Item.ns: arrays of plain values (2 arrays holding 2 whole numbers, 1 other number and 1 null) → JSON text in the string attribute ns",
                     "Item.e: only empty arrays (2 empty arrays) → JSON text in the string attribute e",
                     "Item.m: values of mixed kinds (1 string and 1 array) → JSON text in the string attribute m"] {
            #expect(inference.report.contains(line), "\(inference.report)")
        }
        // JSON text of each value, a string's quotes included.
        #expect(try storeRows(store, "SELECT tags, ns, e, m FROM Item ORDER BY id") == [#"["a","b"]|[1,2.5,null]|[]|"x""#, #"[]|[3]|[]|["y"]"#])
        let empty = try dir.write("page.json", Array(#"{"page":1,"results":[]}"#.utf8))
        #expect(try PipelineInference.infer(feed: empty).report.first
                == "feed: one object with no array of records in it ('results' is empty; were records to come at 'results', infer or import with --records-at results): read as one record")
    }
}
