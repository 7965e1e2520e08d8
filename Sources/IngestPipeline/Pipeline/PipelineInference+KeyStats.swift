import IngestJSON

/// What the sample showed of the members that may name a record without being called an
/// id: whether the values of an identity-like member (`url`, `cca3`, `email`) repeat, and
/// whether a naming member (`name`, `title`) repeats together with another member. An id
/// may repeat in a feed (a later record updates the earlier one); these are taken as keys
/// only when no two sampled records share a value, so their repeats are counted.
///
/// Values are kept as hashes, one per record and member tracked: a sample of a whole
/// feed costs a few bytes a record, and a pair is forgotten once it repeats.
final class RecordKeyStats {
    /// The values of one member, or of one pair, seen so far.
    struct Values {
        var seen: Set<Int> = []
        /// Records whose value an earlier record had.
        var repeats = 0
        /// The first value seen twice (a pair's two values), and how many records hold it.
        var example: [JSONValue] = []
        var exampleRecords = 0
        /// A value that was not plain (or was missing) in some record: no key, whatever repeats.
        var ineligible = false

        mutating func observe(_ values: [JSONValue]) {
            if !example.isEmpty {
                if values == example { exampleRecords += 1 }
                if seen.isEmpty { return }
            }
            var hasher = Hasher()
            for value in values { hasher.combine(value) }
            if !seen.insert(hasher.finalize()).inserted {
                repeats += 1
                if example.isEmpty {
                    example = values
                    exampleRecords = 2
                }
            }
        }

        /// The example as said: `"Saint Mary's College" and "US"`.
        var exampleText: String { example.map(RecordKeyStats.text).joined(separator: " and ") }
    }

    struct Pair: Hashable {
        var naming: String
        var partner: String
    }

    /// A naming member pairs with at most this many others: the first record's first plain members.
    static let partnersPerName = 8

    private(set) var singles: [String: Values] = [:]
    /// Pairs and their values side by side, so that each record's are added in place
    /// (a copy of a pair's values out of a dictionary would copy its set every record).
    private var pairKeys: [Pair] = []
    private var pairValues: [Values] = []
    private(set) var namings: [String] = []
    private(set) var partners: [String] = []
    private var records = 0
    /// Whether a member name is tracked, as first decided for it.
    private var tracked: [String: Bool] = [:]

    func observe(_ members: [JSONMember]) {
        records += 1
        if records == 1 { choosePairs(members) }
        var byName: [String: JSONValue] = [:]
        for member in members {
            let isTracked = tracked[member.key] ?? {
                let decided = PipelineInference.identityRank(member.key) != nil || PipelineInference.isNaming(member.key)
                tracked[member.key] = decided
                return decided
            }()
            guard isTracked else { continue }
            byName[member.key] = member.value
            guard Self.isPlain(member.value) else { continue }
            singles[member.key, default: Values()].observe([member.value])
        }
        guard !pairKeys.isEmpty else { return }
        for partner in partners where byName[partner] == nil { byName[partner] = members.first { $0.key == partner }?.value }
        for (index, pair) in pairKeys.enumerated() where !pairValues[index].ineligible {
            guard let name = byName[pair.naming], let other = byName[pair.partner], Self.isPlain(name), Self.isPlain(other) else {
                // Missing or not plain in this record: the pair names no record; its values go.
                pairValues[index].ineligible = true
                pairValues[index].seen = []
                continue
            }
            pairValues[index].observe([name, other])
            // Once a pair repeats, only its example is counted on.
            if pairValues[index].repeats > 0 { pairValues[index].seen = [] }
        }
    }

    /// The values of a naming member with a partner.
    func pair(_ naming: String, _ partner: String) -> Values? {
        pairKeys.firstIndex(of: Pair(naming: naming, partner: partner)).map { pairValues[$0] }
    }

    /// The naming members of the first record (a member missing from it is in no key), each
    /// paired with the first plain members beside it.
    @_optimize(none)
    private func choosePairs(_ members: [JSONMember]) {
        namings = members.filter { PipelineInference.isNaming($0.key) && Self.isPlain($0.value) }.prefix(2).map(\.key)
        guard !namings.isEmpty else { return }
        partners = members.filter { !namings.contains($0.key) && !PipelineInference.isNaming($0.key) && Self.isPlain($0.value) }
            .prefix(Self.partnersPerName).map(\.key)
        for naming in namings {
            for partner in partners { pairKeys.append(Pair(naming: naming, partner: partner)) }
        }
        pairValues = Array(repeating: Values(), count: pairKeys.count)
    }

    /// A string or a whole number: what a key attribute holds.
    static func isPlain(_ value: JSONValue) -> Bool {
        switch value {
        case .string: true
        case .number(let text): text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == 45 }
        default: false
        }
    }

    static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): JSONValue.string(text).description
        default: value.description
        }
    }
}

extension PipelineInference {
    /// Member names that name a thing where they are given (a country's cca3, a book's
    /// isbn, a page's url, an account's email), most telling first: a record is keyed by
    /// one of these only when no two sampled records share its value. Whole names only:
    /// `country_code`, `avatar_url` and `manager_email` more often name another thing
    /// than the record (the universities feed's `alpha_two_code` is its country's).
    static let identityNames: [String] = [
        "cca3", "cca2", "ccn3", "cioc", "iso3", "iso2", "iso", "iata", "icao", "isin", "isbn13", "isbn", "isbn10", "issn",
        "doi", "orcid", "sku", "gtin", "ean", "upc", "asin", "urn", "uri", "url", "href", "permalink", "link", "email",
        "username", "login", "handle", "screen_name",
    ]
    private static let identityRanks = Dictionary(uniqueKeysWithValues: identityNames.enumerated().map { ($0.element, $0.offset) })

    /// Where `name` comes among identity-like names (nil when it is none).
    static func identityRank(_ name: String) -> Int? {
        identityRanks[name.lowercased()]
    }

    /// Names that say what a record is called: with another member (its country, say) such
    /// a name may be a key of two members.
    static func isNaming(_ name: String) -> Bool {
        namingNames.contains(name.lowercased())
    }

    private static let namingNames: Set<String> = ["name", "title", "label", "full_name", "fullname", "display_name", "displayname"]
}
