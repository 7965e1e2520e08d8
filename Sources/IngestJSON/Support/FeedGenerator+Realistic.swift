extension FeedGenerator {
    private static let words = ["golden", "hour", "over", "the", "bay", "with", "friends", "after", "rain", "blue",
                                "light", "morning", "walk", "old", "bridge", "market", "day", "quiet", "street", "view",
                                "from", "top", "window", "reflections", "winter", "summer", "late", "evening", "boats", "pier"]
    /// Raw UTF-8 as it comes from people typing: accents, CJK, an emoji (four bytes), a dash.
    private static let nonASCII = ["Café", "naïve", "Zürich", "東京タワー", "📷", "São Paulo", "Ålesund", "crème brûlée", "—", "Kraków"]
    private static let makes = [("Canon", "EOS R5"), ("NIKON CORPORATION", "NIKON D850"), ("SONY", "ILCE-7M3"), ("FUJIFILM", "X-T4"),
                                ("Apple", "iPhone 13 Pro"), ("Google", "Pixel 7")]
    private static let asciiSubjects = subjects.filter { $0.utf8.allSatisfy { $0 < 0x80 } }
    private static let asciiPlaces = places.filter { $0.utf8.allSatisfy { $0 < 0x80 } }
    private static let sizeLabels = [("Square", 75), ("Thumbnail", 100), ("Small", 240), ("Medium", 500), ("Large", 1024)]

    /// One record as real exports give them, mapped by the same pipeline as `classic`
    /// (`Pipelines/bench-photos.json`), with what real feeds do that the classic one does not:
    /// - members missing, null and empty: `subtitle` empty in 40% of records, null in 10%,
    ///   missing in 5%; `views` missing or null in 5%; no coordinates in 17%; no photographer in 2%;
    /// - numbers as strings (`views` in 5%), integers where doubles are expected (3% of coordinates),
    ///   coordinates with 1 to 7 decimals;
    /// - escapes and non-ASCII text: in titles, 2% raw non-ASCII UTF-8, 1% an escaped quote,
    ///   1% `\u` escapes, 1% `\n`, `\t` or `\\`; one record in ten from a producer that escapes
    ///   `/` (PHP's `json_encode`), so its URLs read `https:\/\/…`;
    /// - unmapped members, nested objects and arrays: a `description` of up to 12 words (30%, else empty or missing), `license`,
    ///   an `exif` object (40%), a `sizes` array of objects (20%), and in the photographer a
    ///   `username`, `pro` and `location`;
    /// - text mostly ASCII: places in their own spelling (`Reykjavík`) in one subtitle in twenty;
    /// - member order that varies: one record in ten gives its photographer right after its id;
    /// - a long tail of related keys: about one photographer per 20 records, 30% of records by
    ///   the most active 1%, the rest spread over all of them, so most are seen a few times.
    /// A photographer's name is the same wherever its id appears (unless keys repeat: `repeatKeys`).
    func appendRealisticRecord(_ index: Int, pool: Int, rng: inout SplitMix64, to out: inout [UInt8]) {
        func roll(_ sides: UInt64) -> Int { Int(rng.next() % sides) }
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        let photoID = self.photoID(at: index, roll: roll(7))
        let secret = rng.next() & 0xFF_FFFF_FFFF
        // Text is mostly ASCII, as in real feeds: a place's own spelling in one record in twenty.
        let place = roll(20) == 0 ? pick(Self.places) : pick(Self.asciiPlaces)
        let escapesSlashes = roll(10) == 0
        let photographer = roll(10) < 3 ? roll(UInt64(max(1, pool / 100))) : roll(UInt64(pool))
        let photographerRoll = roll(100)
        let photographerFirst = roll(10) == 0

        out.append(contentsOf: "{\"id\":\"\(photoID)\"".utf8)
        func appendPhotographer() {
            switch photographerRoll {
            case 0: out.append(contentsOf: ",\"photographer\":null".utf8)
            case 1: break
            default:
                let first = Self.firstNames[photographer % Self.firstNames.count]
                let last = Self.lastNames[(photographer / Self.firstNames.count) % Self.lastNames.count]
                out.append(contentsOf: ",\"photographer\":{\"id\":\"p\(photographer)\",\"name\":".utf8)
                Self.appendString(photographerName(first, last, at: index), to: &out)
                out.append(contentsOf: ",\"username\":".utf8)
                Self.appendString("\(first.lowercased()).\(photographer)", to: &out)
                out.append(contentsOf: ",\"pro\":\(photographer % 3 == 0),\"location\":".utf8)
                if photographer % 4 == 0 { out.append(contentsOf: "null".utf8) } else { Self.appendString(Self.places[photographer % Self.places.count], to: &out) }
                out.append(UInt8(ascii: "}"))
            }
        }
        if photographerFirst { appendPhotographer() }

        // The title: a few words, now and then with what people and exporters put in text.
        var title = pick(Self.asciiSubjects)
        for _ in 0..<roll(5) { title += " " + pick(Self.words) }
        out.append(contentsOf: ",\"title\":\"".utf8)
        Self.appendEscaped(title, slashes: escapesSlashes, to: &out)
        switch roll(200) {
        case 0..<4: out.append(contentsOf: (" " + pick(Self.nonASCII)).utf8)
        case 4..<6: out.append(contentsOf: " \\\"best of\\\"".utf8)
        case 6..<8: out.append(contentsOf: " caf\\u00e9 \\u2014 \\ud83d\\udcf7".utf8)
        case 8: out.append(contentsOf: "\\nsecond line".utf8)
        case 9: out.append(contentsOf: "\\tC:\\\\photos".utf8)
        default: out.append(contentsOf: " #\(index)".utf8)
        }
        out.append(UInt8(ascii: "\""))

        switch roll(20) {
        case 0..<8: out.append(contentsOf: ",\"subtitle\":\"\"".utf8)
        case 8..<10: out.append(contentsOf: ",\"subtitle\":null".utf8)
        case 10: break
        default:
            out.append(contentsOf: ",\"subtitle\":".utf8)
            Self.appendString("Taken near " + place, to: &out)
        }
        switch roll(10) {
        case 0..<6: out.append(contentsOf: ",\"description\":\"\"".utf8)
        case 9: break
        default:
            let word = pick(Self.words)
            var text = word.prefix(1).uppercased() + word.dropFirst()
            for _ in 0..<(2 + roll(10)) { text += " " + pick(Self.words) }
            out.append(contentsOf: ",\"description\":".utf8)
            Self.appendString(text + ".", to: &out)
        }

        let server = 65_535 - roll(4)
        let url = "https://live.staticflickr.com/\(server)/\(photoID)_\(hex(secret, width: 10))"
        out.append(contentsOf: ",\"photoURL\":\"".utf8)
        Self.appendEscaped(url + "_b.jpg", slashes: escapesSlashes, to: &out)
        out.append(contentsOf: "\",\"thumbnailURL\":\"".utf8)
        Self.appendEscaped(url + "_t.jpg", slashes: escapesSlashes, to: &out)
        out.append(contentsOf: "\",\"uploadDate\":".utf8)
        let seconds = 1_262_304_000 + Int(rng.next() % 473_040_000)
        let dateStyle = roll(10)
        if roll(100) == 0 {
            out.append(contentsOf: "null".utf8)
        } else {
            out.append(UInt8(ascii: "\""))
            appendDate(seconds: seconds, style: dateStyle, to: &out)
            out.append(UInt8(ascii: "\""))
        }

        let views = roll(250_000)
        switch roll(100) {
        case 0..<5: out.append(contentsOf: ",\"views\":\"\(views)\"".utf8)
        case 5..<7: out.append(contentsOf: ",\"views\":null".utf8)
        case 7..<10: break
        default: out.append(contentsOf: ",\"views\":\(views)".utf8)
        }
        out.append(contentsOf: ",\"license\":\(roll(11))".utf8)

        switch roll(100) {
        case 0..<15: break
        case 15..<17: out.append(contentsOf: ",\"latitude\":null,\"longitude\":null".utf8)
        case 17..<20: out.append(contentsOf: ",\"latitude\":\(roll(181) - 90),\"longitude\":\(roll(361) - 180)".utf8)
        default:
            out.append(contentsOf: ",\"latitude\":".utf8)
            appendDecimal(roll(1_700_000_001) - 850_000_000, places: 1 + roll(7), to: &out)
            out.append(contentsOf: ",\"longitude\":".utf8)
            appendDecimal(roll(3_600_000_001) - 1_800_000_000, places: 1 + roll(7), to: &out)
        }

        out.append(contentsOf: ",\"tags\":[".utf8)
        for t in 0..<roll(6) {
            if t > 0 { out.append(UInt8(ascii: ",")) }
            Self.appendString(roll(50) == 0 ? pick(Self.nonASCII) : pick(Self.tags), to: &out)
        }
        out.append(UInt8(ascii: "]"))

        if roll(10) < 4 {
            let (make, model) = pick(Self.makes)
            out.append(contentsOf: ",\"exif\":{\"make\":\"\(make)\",\"model\":\"\(model)\",\"iso\":\(100 << roll(6)),".utf8)
            out.append(contentsOf: "\"exposure\":\"1\\/\(pick([30, 60, 125, 250, 500, 1000]))\",\"aperture\":\(pick(["1.8", "2.8", "4", "5.6", "8", "11"])),\"flash\":\(roll(5) == 0)}".utf8)
        }
        if roll(10) < 2 {
            out.append(contentsOf: ",\"sizes\":[".utf8)
            for s in 0..<(1 + roll(3)) {
                let (label, width) = Self.sizeLabels[s]
                if s > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: "{\"label\":\"\(label)\",\"width\":\(width),\"height\":\(width * 3 / 4),\"url\":\"".utf8)
                Self.appendEscaped("\(url)_\(label.lowercased().prefix(1)).jpg", slashes: escapesSlashes, to: &out)
                out.append(contentsOf: "\"}".utf8)
            }
            out.append(UInt8(ascii: "]"))
        }
        if !photographerFirst { appendPhotographer() }
        out.append(UInt8(ascii: "}"))
    }

    /// `value` (a count of ten-millionths) with its first `places` decimals.
    private func appendDecimal(_ value: Int, places: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let magnitude = abs(value)
        out.append(contentsOf: "\(magnitude / 10_000_000).".utf8)
        var fraction = magnitude % 10_000_000
        for _ in places..<7 { fraction /= 10 }
        appendPadded(fraction, width: places, to: &out)
    }

    /// `text` as a JSON string (quotes included).
    private static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(text, slashes: false, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// `text`'s bytes with `"` and `\` escaped, and `/` too when `slashes`; non-ASCII stays raw.
    private static func appendEscaped(_ text: String, slashes: Bool, to out: inout [UInt8]) {
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (slashes && byte == UInt8(ascii: "/")) {
                out.append(UInt8(ascii: "\\"))
            }
            out.append(byte)
        }
    }
}
