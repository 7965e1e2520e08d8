#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a deterministic feed of Flickr-like photo records: the same record count,
/// seed and style give the same bytes on every machine. The demo and the benchmarks use it.
///
/// `Style.realistic` (what `ingest generate` and the benchmarks make by default) is
/// described at `appendRealisticRecord`. In `Style.classic`, each record has id, title, subtitle, photoURL, thumbnailURL, uploadDate (ISO 8601,
/// with and without fractional seconds and zone offsets), views (about 5% as a numeric
/// string), latitude, longitude, tags and a nested photographer `{id, name}`; there is
/// about one distinct photographer per 20 records, and a photographer's name is the
/// same wherever its id appears (unless keys repeat: `repeatKeys`).
package struct FeedGenerator: Sendable {
    /// How kind the feed is to an importer.
    package enum Style: String, Sendable, CaseIterable {
        /// The feed of Ingest 0.4's benchmarks, kept so that figures stay comparable over
        /// time: every member present, one order, few escapes, photographers drawn evenly.
        case classic
        /// A feed shaped like real exports: members missing, null and empty, numbers as
        /// strings, escapes and non-ASCII text, unmapped nested objects and arrays, and a
        /// long tail of photographers (`appendRealisticRecord`).
        case realistic
    }

    package var records: Int
    package var seed: UInt64
    package var ndjson: Bool
    package var style: Style
    /// How many records give each photo (1: every photo once). Above 1, the feed is shaped like
    /// a catalogue re-exported with corrections or a change log: photos come in groups of
    /// `repeatSpan`, and each group is given `repeatKeys` times in a row, so a photo's records
    /// are `repeatSpan` records apart (in neighbouring chunks at `--chunk-size 500`), the later
    /// ones with other titles and views, and their photographers under other names.
    package var repeatKeys: Int

    /// Records between two appearances of a photo when keys repeat.
    package static let repeatSpan = 500

    package init(records: Int, seed: UInt64 = 42, ndjson: Bool = false, style: Style = .classic, repeatKeys: Int = 1) {
        self.records = records
        self.seed = seed
        self.ndjson = ndjson
        self.style = style
        self.repeatKeys = max(1, repeatKeys)
    }

    /// Record `index`'s photo: its number among the feed's photos, and which of its
    /// appearances this record is (0 for the first).
    package func photo(at index: Int) -> (number: Int, appearance: Int) {
        guard repeatKeys > 1 else { return (index, 0) }
        let (window, offset) = index.quotientAndRemainder(dividingBy: Self.repeatSpan * repeatKeys)
        return (window * Self.repeatSpan + offset % Self.repeatSpan, offset / Self.repeatSpan)
    }

    /// Record `index`'s photo ID; `roll` is the record's draw below 7 (drawn either way, so a
    /// feed without repeats has the bytes it always had).
    func photoID(at index: Int, roll: Int) -> Int {
        let number = photo(at: index).number
        return 50_000_000_000 + number * 7 + (repeatKeys > 1 ? number % 7 : roll)
    }

    /// A photographer's name as record `index` gives it: a later appearance of a repeated
    /// photo renames its photographer, so the feed's last record naming one decides its name.
    func photographerName(_ first: String, _ last: String, at index: Int) -> String {
        let appearance = photo(at: index).appearance
        return appearance == 0 ? first + " " + last : first + " " + last + " (\(appearance + 1))"
    }

    /// How many distinct photographers a feed of `records` records draws from.
    package static func photographerPool(records: Int) -> Int { max(1, records / 20) }

    /// Writes the feed to a file, or to standard output when `path` is nil or "-".
    /// - Throws: `IOError` when the file cannot be written.
    package func write(to path: String?) throws {
        guard let path, path != "-" else {
            try generate { try FileOps.writeAll(STDOUT_FILENO, $0, path: "standard output") }
            return
        }
        // A device or FIFO is written through; a link to a file is refused (see `FileOps.writeAtomically`).
        try FileOps.writeAtomically(to: path) { sink in try generate(sink) }
    }

    /// The feed's bytes, handed to `sink` in blocks of about 1 MiB.
    package func generate(_ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        var rng = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20 + 4096)
        let pool = Self.photographerPool(records: records)
        if !ndjson { out.append(contentsOf: "[\n".utf8) }
        for index in 0..<records {
            switch style {
            case .classic: appendRecord(index, pool: pool, rng: &rng, to: &out)
            case .realistic: appendRealisticRecord(index, pool: pool, rng: &rng, to: &out)
            }
            if ndjson {
                out.append(UInt8(ascii: "\n"))
            } else {
                out.append(contentsOf: index == records - 1 ? "\n".utf8 : ",\n".utf8)
            }
            if out.count >= 1 << 20 {
                try out.withUnsafeBytes(sink)
                out.removeAll(keepingCapacity: true)
            }
        }
        if !ndjson { out.append(contentsOf: "]\n".utf8) }
        try out.withUnsafeBytes(sink)
    }

    /// The whole feed in memory, for tests and small fixtures.
    package func bytes() -> [UInt8] {
        var all: [UInt8] = []
        try? generate { all.append(contentsOf: $0) }
        return all
    }

    // MARK: - One record

    static let subjects = ["Sunset", "Harbour", "Old town", "Mountain lake", "Street market", "Cathedral",
                                   "Night skyline", "Forest path", "Lighthouse", "Café terrace", "Snowy pass",
                                   "Fishing boats", "Rooftops", "Tram stop", "Botanical garden", "富士山"]
    static let places = ["Lisbon", "Porto", "Reykjavík", "Kyoto", "Cape Town", "Montréal", "Hobart",
                                 "Valparaíso", "Tromsø", "Oaxaca", "Edinburgh", "Zürich"]
    static let tags = ["sunset", "travel", "street", "landscape", "night", "architecture", "nature",
                               "blackandwhite", "film", "portrait", "city", "sea", "snow", "hdr"]
    static let firstNames = ["Ana", "Bruno", "Chloé", "Dmitri", "Eilidh", "Farah", "Gustavo", "Hana",
                                     "Ines", "Jonas", "Kwame", "Léa", "Mateo", "Noor", "Oskar", "Priya"]
    static let lastNames = ["Silva", "Okafor", "Nakamura", "O'Brien", "Müller", "Haddad", "Kowalski",
                                    "Fernández", "Lindqvist", "Mensah", "Dubois", "Sato", "Novak", "Rossi"]

    private func appendRecord(_ index: Int, pool: Int, rng: inout SplitMix64, to out: inout [UInt8]) {
        let photoID = self.photoID(at: index, roll: Int(rng.next() % 7))
        let secret = rng.next() & 0xFF_FFFF_FFFF
        let subject = Self.subjects[Int(rng.next() % UInt64(Self.subjects.count))]
        let place = Self.places[Int(rng.next() % UInt64(Self.places.count))]
        let photographer = Int(rng.next() % UInt64(pool))

        out.append(contentsOf: "{\"id\":\"\(photoID)\",\"title\":\"".utf8)
        out.append(contentsOf: subject.utf8)
        switch rng.next() % 20 {
        case 0: out.append(contentsOf: " \\\"best of\\\" #\(index)".utf8)
        case 1: out.append(contentsOf: " \\u2014 \(place)".utf8)
        default: out.append(contentsOf: " #\(index)".utf8)
        }
        out.append(contentsOf: "\",\"subtitle\":\"Taken near \(place)\",".utf8)
        let server = 65_535 - Int(rng.next() % 4)
        let url = "https://live.staticflickr.com/\(server)/\(photoID)_\(hex(secret, width: 10))"
        out.append(contentsOf: "\"photoURL\":\"\(url)_b.jpg\",\"thumbnailURL\":\"\(url)_t.jpg\",".utf8)
        out.append(contentsOf: "\"uploadDate\":\"".utf8)
        appendDate(seconds: 1_262_304_000 + Int(rng.next() % 473_040_000), style: Int(rng.next() % 10), to: &out)
        let views = Int(rng.next() % 250_000)
        if rng.next() % 20 == 0 {
            out.append(contentsOf: "\",\"views\":\"\(views)\",".utf8)
        } else {
            out.append(contentsOf: "\",\"views\":\(views),".utf8)
        }
        out.append(contentsOf: "\"latitude\":".utf8)
        appendFixed(Int(rng.next() % 1_700_001) - 850_000, to: &out)
        out.append(contentsOf: ",\"longitude\":".utf8)
        appendFixed(Int(rng.next() % 3_600_001) - 1_800_000, to: &out)
        out.append(contentsOf: ",\"tags\":[".utf8)
        let tagCount = Int(rng.next() % 5)
        for t in 0..<tagCount {
            if t > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: "\"\(Self.tags[Int(rng.next() % UInt64(Self.tags.count))])\"".utf8)
        }
        out.append(contentsOf: "],\"photographer\":{\"id\":\"p\(photographer)\",\"name\":\"".utf8)
        out.append(contentsOf: photographerName(Self.firstNames[photographer % Self.firstNames.count],
                                                Self.lastNames[(photographer / Self.firstNames.count) % Self.lastNames.count], at: index).utf8)
        out.append(contentsOf: "\"}}".utf8)
    }

    /// Four decimal places from an integer count of ten-thousandths.
    func appendFixed(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let magnitude = abs(value)
        out.append(contentsOf: "\(magnitude / 10_000).".utf8)
        appendPadded(magnitude % 10_000, width: 4, to: &out)
    }

    /// ISO 8601 in the forms feeds use: plain UTC, with milliseconds, or with an offset.
    func appendDate(seconds: Int, style: Int, to out: inout [UInt8]) {
        let offsetMinutes = style == 9 ? 120 : 0
        let local = seconds + offsetMinutes * 60
        let days = local / 86_400
        let secondOfDay = local % 86_400
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        appendPadded(year, width: 4, to: &out)
        out.append(UInt8(ascii: "-")); appendPadded(month, width: 2, to: &out)
        out.append(UInt8(ascii: "-")); appendPadded(day, width: 2, to: &out)
        out.append(UInt8(ascii: "T")); appendPadded(secondOfDay / 3600, width: 2, to: &out)
        out.append(UInt8(ascii: ":")); appendPadded(secondOfDay / 60 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":")); appendPadded(secondOfDay % 60, width: 2, to: &out)
        switch style {
        case 0...1: out.append(contentsOf: ".\(100 + (seconds % 900))Z".utf8)
        case 9: out.append(contentsOf: "+02:00".utf8)
        default: out.append(UInt8(ascii: "Z"))
        }
    }

    /// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func civilDate(daysSinceEpoch: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    func appendPadded(_ value: Int, width: Int, to out: inout [UInt8]) {
        let digits = String(value)
        for _ in digits.count..<max(width, digits.count) { out.append(UInt8(ascii: "0")) }
        out.append(contentsOf: digits.utf8)
    }

    func hex(_ value: UInt64, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// A small, fast, well-mixed PRNG whose output is fixed by its seed on every platform.
/// (Tests across the package draw their random inputs from it too.)
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
