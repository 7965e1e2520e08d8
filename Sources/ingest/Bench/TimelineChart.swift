import Foundation

/// An import's records/s over time as an SVG line chart: one line per worker and one
/// for all of them together, from a report's `timeline` (records per worker per second).
enum TimelineChart {
    static func svg(_ timeline: [[Int]], title: String) -> String {
        let width = 760.0, height = 340.0
        let left = 70.0, right = 150.0, top = 40.0, bottom = 45.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let seconds = max(1, timeline.map(\.count).max() ?? 1)
        let total = (0..<seconds).map { second in timeline.reduce(0) { $0 + (second < $1.count ? $1[second] : 0) } }
        let peak = max(1, total.max() ?? 1)
        let step = niceStep(Double(peak) / 5)
        let scaleTop = (Double(peak) / step).rounded(.up) * step

        func x(_ second: Int) -> Double { left + plotWidth * (Double(second) + 0.5) / Double(seconds) }
        func y(_ value: Int) -> Double { top + plotHeight * (1 - Double(value) / scaleTop) }
        func points(_ series: [Int]) -> String {
            series.enumerated().map { "\(format(x($0.offset))),\(format(y($0.element)))" }.joined(separator: " ")
        }

        let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(Int(left))" y="22" font-size="14" font-weight="bold">\(escape(title)): records/s each second</text>

        """
        var value = 0.0
        while value <= scaleTop + step / 2 {
            let line = y(Int(value))
            svg += "<line x1=\"\(format(left))\" y1=\"\(format(line))\" x2=\"\(format(left + plotWidth))\" y2=\"\(format(line))\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(format(left - 6))\" y=\"\(format(line + 4))\" text-anchor=\"end\">\(Format.count(Int(value)))</text>\n"
            value += step
        }
        let tick = max(1, Int(niceStep(Double(seconds) / 8)))
        for second in stride(from: 0, through: seconds, by: tick) {
            let position = left + plotWidth * Double(second) / Double(seconds)
            svg += "<text x=\"\(format(position))\" y=\"\(format(top + plotHeight + 18))\" text-anchor=\"middle\">\(second)</text>\n"
        }
        svg += "<text x=\"\(format(left + plotWidth / 2))\" y=\"\(format(height - 6))\" text-anchor=\"middle\">seconds since the start</text>\n"
        svg += "<line x1=\"\(format(left))\" y1=\"\(format(top + plotHeight))\" x2=\"\(format(left + plotWidth))\" y2=\"\(format(top + plotHeight))\" stroke=\"black\"/>\n"
        svg += "<line x1=\"\(format(left))\" y1=\"\(format(top))\" x2=\"\(format(left))\" y2=\"\(format(top + plotHeight))\" stroke=\"black\"/>\n"
        var legend: [(String, String, Double)] = [("all workers", "black", 2.5)]
        for (worker, series) in timeline.enumerated() {
            legend.append(("worker \(worker + 1)", colors[worker % colors.count], 1.5))
            svg += "<polyline fill=\"none\" stroke=\"\(colors[worker % colors.count])\" stroke-width=\"1.5\" points=\"\(points(series))\"/>\n"
        }
        svg += "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"2.5\" points=\"\(points(total))\"/>\n"
        for (index, (name, color, stroke)) in legend.enumerated() {
            let line = top + 10 + Double(index) * 20
            svg += "<line x1=\"\(format(width - right + 15))\" y1=\"\(format(line))\" x2=\"\(format(width - right + 40))\" y2=\"\(format(line))\" stroke=\"\(color)\" stroke-width=\"\(stroke)\"/>\n"
            svg += "<text x=\"\(format(width - right + 46))\" y=\"\(format(line + 4))\">\(name)</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0 else { return 1 }
        var power = 1.0
        while power * 10 <= raw { power *= 10 }
        while power > raw { power /= 10 }
        for factor in [1.0, 2.0, 5.0, 10.0] where power * factor >= raw { return power * factor }
        return power * 10
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}
