import IngestJSON
import IngestStore

extension PipelineInference.Builder {
    /// The key chosen for objects like a sample's, and why each member tried before it (or
    /// every one, when none is a key) is not one, for the report.
    struct KeyChoice {
        /// The key's paths: one, or two for a key of two members; none without a key.
        var paths: [String] = []
        var notKeys: [String] = []
        /// How the sample showed the key, after "unique by …".
        var evidence = "present in every one"

        /// The key of one member.
        var key: String? { paths.count == 1 ? paths[0] : nil }
    }

    /// Records with fewer sampled than this get no key of two members: `name` and `country`
    /// unique together in a handful of records says little about the feed.
    static let minimumForTwoMemberKey = 100

    /// The member that names an object: present and scalar (a whole number or a string)
    /// in every one and, for related objects (`consistent`), a key: the same value
    /// always comes with the same content. (Records may repeat a key with other
    /// content: a later record updates the earlier one.)
    static func key(of stats: ObjectStats, entity: String, consistent: Bool = true) -> String? {
        keyChoice(of: stats, entity: entity, consistent: consistent).key
    }

    /// `key(of:)` with why each member tried is not a key: `noun` names the objects
    /// ("records"). Records (whose stats keep `RecordKeyStats`) may also be named by an
    /// identity-like member unique in the sample, or by a naming member and another
    /// unique together.
    @_optimize(none)
    static func keyChoice(of stats: ObjectStats, entity: String, consistent: Bool = true,
                          noun: String = "objects") -> KeyChoice {
        let lower = entity.prefix(1).lowercased() + entity.dropFirst()
        var candidates = ["@key", "id", "_id", "uuid", "guid", "\(lower)Id", "\(lower)_id", "\(lower)ID", "key", "code", "slug"]
        // A keyed map whose objects carry their key as `id` too (`"7": {"id": 7}`): the id,
        // typed as given, is what other records relate to.
        if stats.count > 0, stats.idIsKey == stats.count { candidates.swapAt(0, 1) }
        var choice = KeyChoice()
        guard stats.count > 0 else { return choice }
        for var candidate in candidates {
            guard var field = stats.fields[candidate] else { continue }
            // A MongoDB export's `_id` is an object around the string that names the document.
            if field.isObjectID {
                candidate += ".$oid"
                field = objectIDField(field)
            }
            if let why = whyNotAKey(field, of: stats.count, noun) {
                choice.notKeys.append("'\(candidate)' is not a key: " + why)
                continue
            }
            if consistent, let clashes = stats.conflicts[candidate], let example = clashes.min() {
                choice.notKeys.append("'\(candidate)' is not a key: \(clashes.count) of its values came with different contents in different objects (\(candidate) \(example), say), so it names an object only within its record")
                continue
            }
            choice.paths = [candidate]
            if candidate.hasSuffix(".$oid") { choice.evidence = "MongoDB's ObjectId, present in every one" }
            return choice
        }
        guard let keyStats = stats.keyStats else { return choice }
        if let identity = identityKey(stats, keyStats, noun, &choice.notKeys) {
            choice.paths = [identity]
            choice.evidence = "named like an identity, present in every one, and no two of the \(PipelineInference.counted(stats.count, String(noun.dropLast()), noun)) share a value"
            return choice
        }
        twoMemberKey(stats, keyStats, noun, &choice)
        return choice
    }

    /// The first identity-like member (by `PipelineInference.identityNames`) present, plain
    /// and unique in every record sampled.
    @_optimize(none)
    static func identityKey(_ stats: ObjectStats, _ keyStats: RecordKeyStats, _ noun: String, _ notKeys: inout [String]) -> String? {
        let candidates = stats.order.compactMap { name in PipelineInference.identityRank(name).map { (name: name, rank: $0) } }
            .sorted { $0.rank < $1.rank }
        for candidate in candidates.map(\.name) {
            if let why = whyNotAKey(stats.fields[candidate]!, of: stats.count, noun) ?? shared(keyStats.singles[candidate]) {
                notKeys.append("'\(candidate)' is not a key: " + why)
                continue
            }
            return candidate
        }
        return nil
    }

    /// A naming member with the first member beside it (in the first record) that no two
    /// sampled records share together, from `minimumForTwoMemberKey` records on; else why
    /// each pair is none.
    @_optimize(none)
    static func twoMemberKey(_ stats: ObjectStats, _ keyStats: RecordKeyStats, _ noun: String, _ choice: inout KeyChoice) {
        let records = PipelineInference.counted(stats.count, String(noun.dropLast()), noun)
        for naming in keyStats.namings {
            if let why = whyNotAKey(stats.fields[naming]!, of: stats.count, noun) {
                choice.notKeys.append("'\(naming)' is in no key: " + why)
                continue
            }
            var turnedDown: [String] = []
            for partner in keyStats.partners {
                let values = keyStats.pair(naming, partner)
                if let why = whyNotAKey(stats.fields[partner]!, of: stats.count, noun) ?? shared(values)
                    ?? (values?.ineligible == true ? "their values are not all strings or whole numbers" : nil) {
                    turnedDown.append("with '\(partner)', \(why)")
                    continue
                }
                guard stats.count >= minimumForTwoMemberKey else {
                    choice.notKeys.append("'\(naming)' and '\(partner)' are not a key together: no two of the \(records) share both, but a key of two members is taken from \(minimumForTwoMemberKey) records sampled on (pass a larger --sample, or add \"unique\" to the pipeline)")
                    return
                }
                choice.paths = [naming, partner]
                let alone = shared(keyStats.singles[naming]).map { "; '\(naming)' alone is no key: " + $0 } ?? ""
                choice.evidence = "each in every one, and no two of the \(records) share both\(alone); a key of two members, so the import takes the object path, not the batch path"
                return
            }
            if !turnedDown.isEmpty {
                choice.notKeys.append("'\(naming)' and another member are not a key together: " + turnedDown.joined(separator: "; "))
            }
        }
    }

    /// What two records sharing a value (or a pair of values) look like, or nil when none did.
    static func shared(_ values: RecordKeyStats.Values?) -> String? {
        guard let values, values.repeats > 0 else { return nil }
        let others = values.repeats - (values.exampleRecords - 1)
        return "\(values.exampleRecords) records share " + values.exampleText
            + (others > 0 ? " (and \(others) more record\(others == 1 ? "" : "s") repeat\(others == 1 ? "s" : "") other values)" : "")
    }

    /// A MongoDB ObjectId (`"_id": {"$oid": "5f…"}`) as the string inside, in an attribute
    /// named for the member (`id`), rather than flattened into `id_oid`.
    mutating func addObjectID(_ draft: PipelineInference.Draft, _ member: String, _ path: String, _ field: FieldStats) {
        let name = draft.freeName(PipelineInference.attributeName(member))
        let from = Self.path(path, "$oid")
        draft.add(PipelineInference.Draft.Attribute(name: name, type: .string, from: from))
        report.append("\(draft.name).\(from): string (\(PipelineInference.counted(field.objects, "MongoDB ObjectId")), {\"$oid\": …}"
            + (field.nulls > 0 ? ", \(field.nulls) null" : "") + ") → \(name)")
    }

    /// The counts of `_id.$oid` as those of a member: present and null as `_id` is, a string when an object.
    static func objectIDField(_ field: FieldStats) -> FieldStats {
        let inner = FieldStats()
        inner.present = field.present
        inner.nulls = field.nulls
        inner.strings = field.objects
        return inner
    }

    /// What the sample showed of a member that keeps it from naming `count` objects: absent
    /// from some, null in some, or values that are not all whole numbers or all strings
    /// (found by probing: tweets whose `id` and `_id` were objects were said to have no
    /// id-like field at all). Nil when it could be a key.
    @_optimize(none)
    static func whyNotAKey(_ field: FieldStats, of count: Int, _ noun: String) -> String? {
        var absent: [String] = []
        let all = PipelineInference.counted(count, String(noun.dropLast()), noun)
        if field.present < count { absent.append("missing from \(count - field.present) of the \(all)") }
        if field.nulls > 0 { absent.append("null in \(field.nulls) of " + (absent.isEmpty ? "the \(all)" : "them")) }
        // Whole numbers beyond 64 bits name objects as well as others do (kept as decimal text).
        let whole = field.ints + field.bigIntegers
        let nonNull = field.nonNull
        let kindsFit = nonNull == 0 || whole == nonNull || field.strings == nonNull
        guard !absent.isEmpty || !kindsFit else { return nil }
        var why = absent.isEmpty ? "" : "it is " + absent.joined(separator: " and ")
        if !kindsFit {
            var kinds = field.kinds
            kinds.nulls = 0
            var seen = kinds.description
            if field.objects > 0 {
                let members = field.nested.order.prefix(3).map { JSONValue.string($0).description + ": …" }
                seen += " (" + (field.objects == nonNull ? "" : field.objects == 1 ? "the object " : "the objects ") + "{" + members.joined(separator: ", ")
                    + (field.nested.order.count > 3 ? ", …" : "") + "})"
            }
            why += (why.isEmpty ? "its values are " : ", and its values are ") + seen + ", not all whole numbers or all strings"
        }
        return why
    }
}
