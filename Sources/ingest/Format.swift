/// Number formats for people: 1,000,000 records, 1.52 s, 243.5 MiB/s.
enum Format {
    static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    static func seconds(_ value: Double) -> String {
        value < 10 ? fixed(value, places: 2) + " s" : fixed(value, places: 1) + " s"
    }

    static func rate(_ value: Double) -> String { fixed(value, places: 1) }

    static func fixed(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int((abs(value) * scale).rounded())
        let whole = scaled / Int(scale)
        let sign = value < 0 && scaled > 0 ? "-" : ""
        guard places > 0 else { return sign + count(whole) }
        let fraction = String(scaled % Int(scale))
        return sign + count(whole) + "." + String(repeating: "0", count: places - fraction.count) + fraction
    }
}
