import IngestJSON

extension MemberCensus {
    /// Paths listed by name; the report has them all.
    static let listed = 10

    /// The census as summary lines (none when it is empty): the unmapped member paths,
    /// most records first, and the records that named a member twice.
    func lines(indent: String, more: String) -> [String] {
        var lines: [String] = []
        let ranked = self.ranked
        if !ranked.isEmpty {
            lines.append(indent + "not mapped, so not imported: \(ranked.count) member path(s) (add them to the pipeline, or import with --evolve):")
            let width = ranked.prefix(Self.listed).map(\.path.count).max() ?? 0
            for (path, records) in ranked.prefix(Self.listed) {
                lines.append(indent + "  " + path + String(repeating: " ", count: width - path.count) + "  \(Format.count(records)) record(s)")
            }
            if ranked.count > Self.listed { lines.append(indent + "  … and \(ranked.count - Self.listed) more (\(more))") }
        }
        if repeated > 0 {
            lines.append(indent + "\(Format.count(repeated)) record(s) named a member twice in one object: the last value was imported")
        }
        return lines
    }
}
