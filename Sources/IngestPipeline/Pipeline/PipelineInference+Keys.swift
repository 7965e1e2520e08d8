import IngestJSON

extension PipelineInference.Builder {
    /// The member that names an object: present and scalar (a whole number or a string)
    /// in every one and, for related objects (`consistent`), a key: the same value
    /// always comes with the same content. (Records may repeat a key with other
    /// content: a later record updates the earlier one.)
    static func key(of stats: ObjectStats, entity: String, consistent: Bool = true) -> String? {
        keyChoice(of: stats, entity: entity, consistent: consistent).key
    }

    /// `key(of:)` with why each id-like member tried before it (or every one, when none
    /// is a key) is not one, for the report: `noun` names the objects ("records").
    static func keyChoice(of stats: ObjectStats, entity: String, consistent: Bool = true,
                          noun: String = "objects") -> (key: String?, notKeys: [String]) {
        let lower = entity.prefix(1).lowercased() + entity.dropFirst()
        var candidates = ["@key", "id", "_id", "uuid", "guid", "\(lower)Id", "\(lower)_id", "\(lower)ID", "key", "code", "slug"]
        // A keyed map whose objects carry their key as `id` too (`"7": {"id": 7}`): the id,
        // typed as given, is what other records relate to.
        if stats.count > 0, stats.idIsKey == stats.count { candidates.swapAt(0, 1) }
        var notKeys: [String] = []
        for candidate in candidates {
            guard let field = stats.fields[candidate], stats.count > 0 else { continue }
            if let why = whyNotAKey(field, of: stats.count, noun) {
                notKeys.append("'\(candidate)' is not a key: " + why)
                continue
            }
            if consistent, let clashes = stats.conflicts[candidate], let example = clashes.min() {
                notKeys.append("'\(candidate)' is not a key: \(clashes.count) of its values came with different contents in different objects (\(candidate) \(example), say), so it names an object only within its record")
                continue
            }
            return (candidate, notKeys)
        }
        return (nil, notKeys)
    }

    /// What the sample showed of a member that keeps it from naming `count` objects: absent
    /// from some, null in some, or values that are not all whole numbers or all strings
    /// (found by probing: tweets whose `id` and `_id` were objects were said to have no
    /// id-like field at all). Nil when it could be a key.
    static func whyNotAKey(_ field: FieldStats, of count: Int, _ noun: String) -> String? {
        var absent: [String] = []
        if field.present < count { absent.append("missing from \(count - field.present) of the \(PipelineInference.counted(count, String(noun.dropLast()), noun))") }
        if field.nulls > 0 { absent.append("null in \(field.nulls) of them") }
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
