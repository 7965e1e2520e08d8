import Foundation
public import IngestJSON
import IngestStore

/// Writes a pipeline for a feed nobody described: reads a sample of its records and
/// chooses a model and mappings a user can then edit (sqlite-utils' "one command, no
/// schema", with Core Data's object graph at the end).
///
/// - Scalars become attributes: int64, double, bool, string, or date where ISO 8601
///   strings (or epoch numbers in a field named like a time) make up every value.
/// - A nested object with an `id`-like field becomes a related entity found or created
///   by it; one without is flattened into its parent (`geometry_type`).
/// - An array of objects with an `id`-like field becomes a to-many relationship; other
///   arrays are kept as JSON text.
/// - An object keyed by codes or ids (`"languages": {"por": "Portuguese"}`) becomes a
///   to-many read with `"keyed": true`, one related object per member.
/// - The record's own `id`-like field is its entity's uniqueness constraint; without one,
///   an identity-like member (`url`, `cca3`) unique in the sample, MongoDB's `_id.$oid`, or
///   a naming member with another unique together.
///
/// Each choice is explained in `Inference.report`, with what could not be decided.
public enum PipelineInference {
    public struct Options: Sendable {
        /// Records read; the rest of the feed is not opened.
        public var sample: Int
        /// The feed's shape, or nil to detect it from the first bytes.
        public var shape: FeedShape?
        public var form: RecordForm
        /// The limits a read of the feed keeps, as `split` and `import` keep them.
        public var maxDepth = FeedOptions.defaultMaxDepth
        public var maxRecordBytes = FeedOptions.defaultMaxRecordBytes
        /// The feed's name in messages, and what the record entity is named for, when the
        /// path read stands in for it (a copy of standard input, named "-").
        public var name: String?

        public init(sample: Int = 1_000, shape: FeedShape? = nil, form: RecordForm = .objects) {
            self.sample = sample
            self.shape = shape
            self.form = form
        }

        func feedOptions(_ shape: FeedShape) -> FeedOptions {
            FeedOptions(shape: shape, maxDepth: maxDepth, maxRecordBytes: maxRecordBytes)
        }
    }

    /// A feed with no records in it (`[]`): there is nothing to infer a pipeline from.
    public struct EmptyFeed: Error, Sendable, Equatable, CustomStringConvertible {
        public var feed: String
        public var description: String { "\(feed): the feed holds no records, so there is nothing to infer a pipeline from" }
    }

    /// An inferred pipeline: its text (to write and edit), the parsed spec, and the report.
    public struct Inference: Sendable {
        public var text: String
        public var spec: PipelineSpec
        public var shape: FeedShape
        public var recordsRead: Int
        /// One line per choice: what was seen, what was chosen, what could not be decided.
        public var report: [String]
    }

    /// Infers a pipeline from the first `options.sample` records of `feed`.
    /// - Throws: `FeedError`, `IOError`, `CompressionError` when the sample cannot be read;
    ///   `EmptyFeed` when the feed has no records; `PipelineError` when no record in the
    ///   sample is an object or every one breaks a limit.
    @_optimize(none)
    public static func infer(feed: String, options: Options = Options()) throws -> Inference {
        let name = options.name ?? feed
        var report: [String] = []
        let shape = try options.shape ?? detectShape(feed, report: &report, options: options)
        var form = options.form
        if form == .objects, try startsWithHeaderRow(feed, shape: shape, options: options) {
            form = .rows(columns: nil)
            report.append("feed: rows of values; the first row (all strings) names the columns")
        }
        // Each record is counted as it is read, not kept: a sample as large as the feed
        // (what a member first seen late asks for) takes the memory of its counts, of its
        // id-like values and of hashes of members that may be keys, not of its records.
        var read = 0, misfits = 0, objects = 0
        let stats = ObjectStats(records: true)
        // A feed of plain values (tags, ids, words) is mapped as "@value": counted as such until an object shows up.
        let values = ObjectStats()
        let mayBeValues = form == .objects && !shape.isKeyed
        var refused = 0
        var firstRefusal: FeedError?
        let reader = try openFeed(feed, options, shape)
        var shaper = RecordShaper(form: form)
        shaper.maxDepth = options.maxDepth
        struct Enough: Error {}
        do {
            try reader.read { record in
                // A record over a limit is rejected on import; the sample does without it.
                if let refusal = record.refusal {
                    refused += 1
                    if firstRefusal == nil { firstRefusal = refusal }
                    return
                }
                guard let bytes = try shaper.shape(record, error: { FeedError(.malformedJSON, $0, at: SourcePosition.locate(byteOffset: record.byteOffset, inFeed: feed), source: name) }) else { return }
                let value = try JSONValue.parse(bytes, maxDepth: options.maxDepth)
                read += 1
                if value[rowErrorKey] != nil {
                    misfits += 1
                } else if case .object = value {
                    objects += 1
                    stats.observe(value)
                } else if objects == 0 && mayBeValues {
                    values.observe(.object([JSONMember(valueKey, value)]))
                }
                if read >= options.sample { throw Enough() }
            }
        } catch is Enough {}
        if read == 0 && refused == 0 { throw EmptyFeed(feed: name) }
        if refused > 0 { report.append("\(refused) record(s) read break the record size or depth limit: left out of the sample (they will be rejected)") }
        if misfits > 0 { report.append("\(misfits) of the rows read do not have as many values as the header has names: left out of the sample (they will be rejected)") }
        var sampled = stats
        if objects == 0, mayBeValues, read > 0 {
            form = .values
            sampled = values
            objects = read
            report.append("feed: records are plain values, not objects: each is mapped through \"\(valueKey)\" (the pipeline's feed says \"values\": true)")
        }
        guard objects > 0 else {
            if read == 0, let firstRefusal {
                throw PipelineError(at: nil, "\(name): every record read (\(refused)) breaks the record size or depth limit, so there is nothing to infer from (raise --max-record-size or --max-depth); the first: \(firstRefusal.message)")
            }
            throw PipelineError(at: nil, "\(name): none of the \(read) records read is an object, so there is nothing to map")
        }
        if objects + misfits < read {
            report.append("\(read - objects - misfits) of the \(read) records read are not objects: they will be rejected")
        }
        var builder = Builder(report: report)
        let recordName = entityName(forFeed: name, shape: shape)
        let root = builder.entity(recordName, sampled, path: "", isRecord: true, depth: 0)
        builder.noteLookalikes()
        let text = builder.pipelineText(root: root, shape: shape, form: form)
        let spec = try PipelineSpec.parse(Array(text.utf8))
        return Inference(text: text, spec: spec, shape: shape, recordsRead: read + refused, report: builder.report)
    }

    /// A reader of `feed` in `shape`, naming it as `options` says.
    static func openFeed(_ feed: String, _ options: Options, _ shape: FeedShape) throws -> FeedReader {
        FeedReader(source: try FeedByteSource(path: feed), name: options.name ?? feed, options: options.feedOptions(shape))
    }

    /// The shape from the feed's first bytes: `[` an array, several values NDJSON, one
    /// object its array member with the most objects (or its values, when they are all
    /// objects), else the object itself as the one record.
    static func detectShape(_ feed: String, report: inout [String], options: Options = Options()) throws -> FeedShape {
        let source = try FeedByteSource(path: feed)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 8)
        defer { buffer.deallocate() }
        var count = 0
        while count < buffer.count {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]))
            if n == 0 { break }
            count += n
        }
        let head = Array(buffer[0..<count])
        guard let first = head.firstIndex(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF) }) else {
            return .array
        }
        // One line that parses alone, followed by another value: NDJSON (of objects, or of rows).
        if let newline = head[first...].firstIndex(of: 0x0A), (try? JSONValue.parse(Array(head[first..<newline]))) != nil,
           head[(newline + 1)...].contains(where: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") }) {
            report.append("feed: newline-delimited JSON (one record per line)")
            return .ndjson
        }
        if head[first] == UInt8(ascii: "[") {
            report.append("feed: a top-level array of records")
            return .array
        }
        // One object: read it whole (the sample needs it anyway) and look at its members.
        let reader = try openFeed(feed, options, .ndjson)
        var top: JSONValue?
        try reader.read { record in
            if let refusal = record.refusal { throw refusal }
            if top == nil { top = try JSONValue.parse(record.bytes, maxDepth: options.maxDepth) }
        }
        guard case .object(let members)? = top else { return .ndjson }
        // What the records leave out is said, never dropped without a word.
        func outside(_ records: String) -> String {
            let others = members.map(\.key).filter { $0 != records }
            guard !others.isEmpty else { return "" }
            let names = others.prefix(8).map { "'\($0)'" }.joined(separator: ", ") + (others.count > 8 ? " and \(others.count - 8) more" : "")
            return "; the other top-level member\(others.count == 1 ? "" : "s") (\(names)) \(others.count == 1 ? "is" : "are") outside the records and not imported: to import the whole object as one record, infer or import with --ndjson"
        }
        // The array of records: the one with the most objects (a GeoJSON bbox has more numbers than features).
        var best: (key: String, objects: Int, count: Int)?
        for member in members {
            guard case .array(let items) = member.value else { continue }
            let objects = items.filter { if case .object = $0 { true } else { false } }.count
            if best == nil || (objects, items.count) > (best!.objects, best!.count) { best = (member.key, objects, items.count) }
        }
        // An array of plain values (tags, coordinates) is a field of the one record, not records.
        if let best, best.objects > 0 {
            report.append("feed: records in the array at '\(best.key)' (\(best.count) of them; the top-level array with the most objects)" + outside(best.key))
            return .keyPath([best.key])
        }
        let objectMembers = members.filter { if case .object = $0.value { true } else { false } }
        if let inner = objectMembers.first(where: { member in
            guard case .object(let values) = member.value, values.count > 1 else { return false }
            return values.allSatisfy { if case .object = $0.value { true } else { false } }
        }) {
            report.append("feed: records are the values of the object at '\(inner.key)', keyed by their names (mapped as \"@key\")" + outside(inner.key))
            return .keyed([inner.key])
        }
        if members.count > 1, members.allSatisfy({ if case .object = $0.value { true } else { false } }) {
            report.append("feed: records are the values of the top-level object, keyed by their names (mapped as \"@key\")")
            return .keyed([])
        }
        // Its arrays are said as seen: plain values are a field of the record; an empty one may be where records would be.
        var arrays: [String] = []
        var plain = false
        var firstEmpty: String?
        for member in members {
            guard case .array(let items) = member.value else { continue }
            var kinds = ValueKinds()
            items.forEach { kinds.count($0) }
            arrays.append("'\(member.key)' " + (items.isEmpty ? "is empty" : "holds \(kinds.description)"))
            if items.isEmpty { firstEmpty = firstEmpty ?? member.key } else { plain = true }
        }
        var seen = ""
        if !arrays.isEmpty {
            seen = " (" + list(Array(arrays.prefix(3))) + (arrays.count > 3 ? " and \(arrays.count - 3) more arrays" : "")
                + (plain ? ": plain values, not records" : "")
                + (firstEmpty.map { "; were records to come at '\($0)', infer or import with --records-at \($0)" } ?? "") + ")"
        }
        report.append("feed: one object with no array of records in it\(seen): read as one record")
        return .ndjson
    }

    /// Whether the first record is an array of strings and the second an array: rows
    /// under a header row.
    static func startsWithHeaderRow(_ feed: String, shape: FeedShape, options: Options = Options()) throws -> Bool {
        let reader = try openFeed(feed, options, shape)
        var firstTwo: [JSONValue] = []
        struct Enough: Error {}
        do {
            try reader.read { record in
                // A record over a limit is no header row, and leaves the first two undecided.
                if record.refusal != nil { throw Enough() }
                firstTwo.append(try JSONValue.parse(record.bytes, maxDepth: options.maxDepth))
                if firstTwo.count == 2 { throw Enough() }
            }
        } catch is Enough {}
        guard firstTwo.count == 2, case .array(let names) = firstTwo[0], !names.isEmpty, case .array = firstTwo[1] else { return false }
        return names.allSatisfy { if case .string = $0 { true } else { false } }
    }

    /// "photos.json" → Photo, records at "features" → Feature.
    @_optimize(none)
    static func entityName(forFeed feed: String, shape: FeedShape) -> String {
        var base: String
        switch shape {
        case .keyPath(let keys): base = keys.last ?? "Record"
        case .keyed(let keys) where !keys.isEmpty: base = keys.last!
        default:
            base = (feed as NSString).lastPathComponent
            while let dot = base.lastIndex(of: "."), dot != base.startIndex { base = String(base[..<dot]) }
            // "photos-2024-03" → "photos": the words, not the dates and counts.
            // A token with a digit in it (2024, 03, 5k) is a date or a count, not a word.
            let words = base.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init)
                .filter { $0.allSatisfy(\.isLetter) }
            if !words.isEmpty { base = words.joined(separator: "_") }
        }
        let name = typeName(singular(base))
        return name.isEmpty || feed == "-" && !(shape.isKeyPath) ? "Record" : name
    }

    /// The singular of a plural member name (`photos` → photo, `seat_categories` →
    /// seat_category, `retweetedStatuses` → retweetedStatus), changing only its last word,
    /// and only when sure: a word that may already be singular (`status`, `series`,
    /// `analysis`, `news`, `data`) or whose singular English cannot be told from its
    /// spelling (`caches`, `leaves`) stays as it is.
    @_optimize(none)
    static func singular(_ word: String) -> String {
        let (head, last) = splitLastWord(word)
        let lower = last.lowercased()
        func keep(_ count: Int) -> String { head + String(last.dropLast(count)) }
        if let irregular = irregularPlurals[lower] { return head + matchCase(irregular, like: last) }
        if lower.count <= 2 || unchanging.contains(lower) || singularInS.contains(lower) { return word }
        if lower.hasSuffix("ies") {
            // cities → city, but movies → movie, cookies → cookie.
            return endsInIeNoun.contains(lower) ? keep(1) : keep(3) + (last.last!.isUppercase ? "Y" : "y")
        }
        if lower.hasSuffix("statuses") || lower.hasSuffix("buses") || lower.hasSuffix("viruses") || lower.hasSuffix("campuses") { return keep(2) }
        for ending in ["sses", "xes", "zzes", "shes", "tches", "rches", "nches"] where lower.hasSuffix(ending) { return keep(2) }
        // Unsure: caches or coaches, leaves or archives, analyses or bases.
        if lower.hasSuffix("ches") || lower.hasSuffix("ves") || lower.hasSuffix("ses") { return word }
        // Already singular: status, bonus, analysis, class, famous, physics.
        for ending in ["us", "is", "ss", "ics"] where lower.hasSuffix(ending) { return word }
        return lower.hasSuffix("s") ? keep(1) : word
    }

    /// The plural of a singular name, for an inverse relationship (`post` → posts,
    /// `seatCategory` → seatCategories, `status` → statuses, `box` → boxes).
    @_optimize(none)
    static func plural(_ word: String) -> String {
        let (head, last) = splitLastWord(word)
        let lower = last.lowercased()
        if let irregular = irregularPlurals.first(where: { $0.value == lower })?.key { return head + matchCase(irregular, like: last) }
        if unchanging.contains(lower) { return word }
        if lower.hasSuffix("ie") { return word + "s" }
        if lower.hasSuffix("y"), let before = lower.dropLast().last, !"aeiou".contains(before) {
            return head + String(last.dropLast()) + (last.last!.isUppercase ? "IES" : "ies")
        }
        for ending in ["s", "x", "z", "ch", "sh"] where lower.hasSuffix(ending) { return word + "es" }
        return word + "s"
    }

    /// `seat_categories` → ("seat_", "categories"), `seatCategories` → ("seat", "Categories").
    private static func splitLastWord(_ word: String) -> (head: String, last: String) {
        var start = word.endIndex
        var index = word.endIndex
        while index > word.startIndex {
            let previous = word.index(before: index)
            let character = word[previous]
            if !character.isLetter { break }
            start = previous
            // camelCase: the last word starts at its capital (a run of capitals is one word: URLs).
            if character.isUppercase, previous > word.startIndex, word[word.index(before: previous)].isLowercase { break }
            index = previous
        }
        return (String(word[..<start]), String(word[start...]))
    }

    private static func matchCase(_ word: String, like model: String) -> String {
        model.first?.isUppercase == true ? word.prefix(1).uppercased() + word.dropFirst() : word
    }

    private static let irregularPlurals = [
        "people": "person", "children": "child", "men": "man", "women": "woman", "mice": "mouse", "geese": "goose",
        "feet": "foot", "teeth": "tooth", "indices": "index", "matrices": "matrix", "vertices": "vertex",
        "criteria": "criterion", "phenomena": "phenomenon", "analyses": "analysis", "crises": "crisis",
        "theses": "thesis", "axes": "axis", "wives": "wife", "knives": "knife", "lives": "life", "halves": "half",
        "shelves": "shelf", "leaves": "leaf", "quizzes": "quiz",
    ]
    /// Words whose singular and plural are spelled alike, or that are seldom counted.
    private static let unchanging: Set<String> = [
        "data", "metadata", "media", "news", "series", "species", "info", "information", "equipment", "sheep", "fish",
        "deer", "aircraft", "software", "hardware", "feedback",
    ]
    /// Singular words ending in s that the rules below would cut.
    private static let singularInS: Set<String> = [
        "gas", "canvas", "alias", "atlas", "bias", "lens", "chaos", "ethos", "kudos", "pros", "cons",
    ]
    private static let endsInIeNoun: Set<String> = [
        "movies", "cookies", "zombies", "selfies", "rookies", "hippies", "ties", "pies", "lies", "genies", "calories",
        "brownies", "smoothies", "aunties", "goalies", "freebies", "hoodies", "species", "series",
    ]

    /// `github_user`, `user-name` → GithubUser, UserName.
    static func typeName(_ text: String) -> String {
        let parts = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        let name = parts.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        guard let first = name.first else { return "" }
        return first.isNumber ? "E" + name : name
    }

    /// A member name as an attribute name: `_id` → id, `@key` → key, `addr:street` → addr_street.
    static func attributeName(_ key: String) -> String {
        var name = String(key.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
        while name.hasPrefix("_") { name.removeFirst() }
        if name.isEmpty { return "value" }
        return name.first!.isNumber ? "f" + name : name
    }
}

extension FeedShape {
    var isKeyPath: Bool { if case .keyPath = self { true } else { false } }
    var isKeyed: Bool { if case .keyed = self { true } else { false } }
}
